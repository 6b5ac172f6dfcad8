//! Builder methods on the WIT types a tool constructs.
//!
//! The types themselves are generated from the WIT contract (see
//! [`crate::types`]); their fields stay public, so a struct literal always
//! works too.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::types::{
    Annotations, CallResult, ClientCapabilities, ContentBlock, ElicitationRequest,
    EmbeddedResource, FormElicitation, IncludeContext, InputRequest, InputRequired, MediaContent,
    ModelHint, ModelPreferences, ResourceBody, ResourceContents, ResourceLink, Role,
    SamplingContent, SamplingMessage, SamplingRequest, TaskSupport, TextContent, Tool,
    ToolAnnotations, ToolChoice, UrlElicitation,
};

// ---------------------------------------------------------------------------
// Results and content
// ---------------------------------------------------------------------------

impl Default for CallResult {
    fn default() -> Self {
        Self::new()
    }
}

impl CallResult {
    /// An empty, successful result; add content with the `with_*` methods.
    pub fn new() -> Self {
        Self {
            content: Vec::new(),
            structured_content: None,
            is_error: false,
        }
    }

    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::new().with_text(text)
    }

    /// A failed result (`is_error: true`) with one text block for the model.
    pub fn error(message: impl Into<String>) -> Self {
        Self::text(message).with_is_error(true)
    }

    /// A successful result with `value` as structured content and its JSON
    /// text as the one text block.
    ///
    /// If `value` cannot be serialized, the result is an error saying so.
    pub fn json<T: Serialize + ?Sized>(value: &T) -> Self {
        match serde_json::to_string(value) {
            Ok(json) => Self::text(json.clone()).with_structured_json(json),
            Err(err) => Self::error(format!("could not encode the result as JSON: {err}")),
        }
    }

    /// Adds a text block.
    pub fn with_text(self, text: impl Into<String>) -> Self {
        self.with_content(ContentBlock::text(text))
    }

    /// Adds an image (raw bytes; the host base64-encodes them), e.g.
    /// `with_image(png, "image/png")`.
    pub fn with_image(self, data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        self.with_content(ContentBlock::image(data, mime_type))
    }

    /// Adds an audio clip (raw bytes), e.g. `with_audio(wav, "audio/wav")`.
    pub fn with_audio(self, data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        self.with_content(ContentBlock::audio(data, mime_type))
    }

    /// Adds a link to a resource.
    pub fn with_resource_link(self, link: ResourceLink) -> Self {
        self.with_content(ContentBlock::ResourceLink(link))
    }

    /// Adds an embedded resource.
    pub fn with_resource(self, resource: EmbeddedResource) -> Self {
        self.with_content(ContentBlock::EmbeddedResource(resource))
    }

    /// Adds any content block.
    pub fn with_content(mut self, block: ContentBlock) -> Self {
        self.content.push(block);
        self
    }

    /// Sets the structured content to `value` (no text block is added; see
    /// [`CallResult::json`] for both). If `value` cannot be serialized, the
    /// result becomes an error saying so.
    pub fn with_structured<T: Serialize + ?Sized>(self, value: &T) -> Self {
        match serde_json::to_string(value) {
            Ok(json) => self.with_structured_json(json),
            Err(err) => Self::error(format!("could not encode the result as JSON: {err}")),
        }
    }

    /// Sets the structured content to this JSON text, as is. The host
    /// rejects text that is not valid JSON.
    pub fn with_structured_json(mut self, json: impl Into<String>) -> Self {
        self.structured_content = Some(json.into());
        self
    }

    /// Sets `is_error`.
    pub fn with_is_error(mut self, is_error: bool) -> Self {
        self.is_error = is_error;
        self
    }

    /// The text blocks, joined by newlines. Handy in tests.
    pub fn text_content(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter_map(|block| match block {
                ContentBlock::Text(text) => Some(text.text.as_str()),
                _ => None,
            })
            .collect();
        texts.join("\n")
    }
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            annotations: None,
        })
    }

    /// An image block from raw bytes.
    pub fn image(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Self::Image(MediaContent {
            data,
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// An audio block from raw bytes.
    pub fn audio(data: Vec<u8>, mime_type: impl Into<String>) -> Self {
        Self::Audio(MediaContent {
            data,
            mime_type: mime_type.into(),
            annotations: None,
        })
    }

    /// The same block with these annotations.
    pub fn with_annotations(mut self, annotations: Annotations) -> Self {
        let slot = match &mut self {
            Self::Text(block) => &mut block.annotations,
            Self::Image(block) | Self::Audio(block) => &mut block.annotations,
            Self::ResourceLink(block) => &mut block.annotations,
            Self::EmbeddedResource(block) => &mut block.annotations,
        };
        *slot = Some(annotations);
        self
    }
}

impl Default for Annotations {
    fn default() -> Self {
        Self::new()
    }
}

impl Annotations {
    /// No hints.
    pub fn new() -> Self {
        Self {
            audience: Vec::new(),
            priority: None,
            last_modified: None,
        }
    }

    /// Adds `role` to the intended readers.
    pub fn audience(mut self, role: Role) -> Self {
        if !self.audience.contains(&role) {
            self.audience.push(role);
        }
        self
    }

    /// Sets the importance, from 0.0 (least) to 1.0 (most).
    pub fn priority(mut self, priority: f64) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Sets the ISO 8601 time of the last modification.
    pub fn last_modified(mut self, timestamp: impl Into<String>) -> Self {
        self.last_modified = Some(timestamp.into());
        self
    }
}

impl ResourceLink {
    /// A link to the resource at `uri`, called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
        }
    }

    /// Sets a human-readable title.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets a description.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the size in bytes.
    pub fn size(mut self, size: u64) -> Self {
        self.size = Some(size);
        self
    }
}

impl EmbeddedResource {
    /// A text resource at `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self::with_body(uri.into(), ResourceBody::Text(text.into()))
    }

    /// A binary resource at `uri` (raw bytes; the host base64-encodes them).
    pub fn blob(uri: impl Into<String>, data: Vec<u8>) -> Self {
        Self::with_body(uri.into(), ResourceBody::Blob(data))
    }

    fn with_body(uri: String, body: ResourceBody) -> Self {
        Self {
            contents: ResourceContents {
                uri,
                mime_type: None,
                body,
                meta: None,
            },
            annotations: None,
        }
    }

    /// Sets the MIME type of the contents.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.contents.mime_type = Some(mime_type.into());
        self
    }
}

// ---------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------

impl Tool {
    /// A tool called `name` (1 to 64 characters of `A-Z a-z 0-9 _ - .`,
    /// unique across the server) that `description` explains to the model.
    ///
    /// It takes no arguments until [`Tool::input_schema`] says otherwise.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema: r#"{"type":"object","properties":{},"required":[]}"#.to_owned(),
            output_schema: None,
            annotations: None,
            task_support: TaskSupport::Never,
            meta: None,
        }
    }

    /// Sets a human-readable name for display.
    pub fn title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the JSON Schema of the arguments; its root must be
    /// `{"type": "object", ...}`.
    pub fn input_schema(mut self, schema: Value) -> Self {
        self.input_schema = schema.to_string();
        self
    }

    /// Sets the JSON Schema of the structured content the tool returns.
    pub fn output_schema(mut self, schema: Value) -> Self {
        self.output_schema = Some(schema.to_string());
        self
    }

    /// Sets the JSON Schema of the arguments from their type `A`, which
    /// derives `schemars::JsonSchema` beside `serde::Deserialize` (feature
    /// `schemars`). Doc comments become descriptions: on a field, the
    /// field's; on the type, the whole schema's (the model reads both).
    ///
    /// ```
    /// # #[cfg(feature = "schemars")] {
    /// use airlock_guest::{Tool, json};
    /// use schemars::JsonSchema;
    /// use serde::Deserialize;
    ///
    /// #[derive(Deserialize, JsonSchema)]
    /// struct Args {
    ///     /// The text to hash.
    ///     text: String,
    ///     /// How many times; once if left out.
    ///     rounds: Option<u32>,
    /// }
    ///
    /// let tool = Tool::new("hash", "Hashes a text.").input::<Args>();
    /// let schema: serde_json::Value = serde_json::from_str(&tool.input_schema).unwrap();
    /// assert_eq!(schema["type"], "object");
    /// assert_eq!(schema["properties"]["text"]["description"], "The text to hash.");
    /// assert_eq!(schema["required"], json!(["text"]));
    /// # }
    /// ```
    #[cfg(feature = "schemars")]
    pub fn input<A: schemars::JsonSchema>(self) -> Self {
        self.input_schema(crate::schema::of_input::<A>())
    }

    /// Sets the JSON Schema of the structured content from its type `T`
    /// (feature `schemars`), e.g. the type a tool passes to
    /// [`Outcome::json`](crate::Outcome::json).
    #[cfg(feature = "schemars")]
    pub fn output<T: schemars::JsonSchema>(self) -> Self {
        self.output_schema(crate::schema::of_output::<T>())
    }

    /// Sets all behaviour hints at once.
    pub fn annotations(mut self, annotations: ToolAnnotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Hints that the tool does not modify its environment.
    pub fn read_only(self) -> Self {
        self.hint(|hints| hints.read_only_hint = Some(true))
    }

    /// Hints whether the tool may perform destructive updates.
    pub fn destructive(self, destructive: bool) -> Self {
        self.hint(|hints| hints.destructive_hint = Some(destructive))
    }

    /// Hints that calling the tool twice with the same arguments has no
    /// extra effect.
    pub fn idempotent(self) -> Self {
        self.hint(|hints| hints.idempotent_hint = Some(true))
    }

    /// Hints whether the tool interacts with an open world of external
    /// entities.
    pub fn open_world(self, open_world: bool) -> Self {
        self.hint(|hints| hints.open_world_hint = Some(open_world))
    }

    /// Sets whether calls may run as tasks (MCP's tasks extension); `never`
    /// unless set. With `optional` a call becomes a task when the tool
    /// returns [`Outcome::continue_as_task`](crate::Outcome::continue_as_task)
    /// for a client that can use tasks; with `required` the host refuses
    /// clients that cannot (error -32021) before the tool runs.
    pub fn task_support(mut self, support: TaskSupport) -> Self {
        self.task_support = support;
        self
    }

    /// Sets its `_meta`, a JSON object sent as it is; replaces any set
    /// before.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Value::Object(meta).to_string());
        self
    }

    fn hint(mut self, set: impl FnOnce(&mut ToolAnnotations)) -> Self {
        set(self
            .annotations
            .get_or_insert_with(ToolAnnotations::default));
        self
    }
}

impl Default for ToolAnnotations {
    /// No hints.
    fn default() -> Self {
        Self {
            title: None,
            read_only_hint: None,
            destructive_hint: None,
            idempotent_hint: None,
            open_world_hint: None,
        }
    }
}

// ---------------------------------------------------------------------------
// Input requests
// ---------------------------------------------------------------------------

/// `state` as JSON bytes, the form of the state a tool carries to its next
/// round ([`InputRequired::state`], [`Outcome::continue_as_task`]).
///
/// [`Outcome::continue_as_task`]: crate::Outcome::continue_as_task
///
/// # Panics
///
/// If `state` cannot be serialized to JSON: a bug in the tool.
pub(crate) fn state_json<S: Serialize + ?Sized>(state: &S) -> Vec<u8> {
    serde_json::to_vec(state)
        .unwrap_or_else(|err| panic!("tool state is not serializable as JSON: {err}"))
}

impl Default for InputRequired {
    fn default() -> Self {
        Self::new()
    }
}

impl InputRequired {
    /// Nothing asked for yet; add requests and state with the methods below.
    pub fn new() -> Self {
        Self {
            requests: Vec::new(),
            state: None,
        }
    }

    /// Asks for `request` under `key`; the answer comes back under the same
    /// key. A request already under `key` is replaced.
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        let key = key.into();
        self.requests.retain(|(k, _)| *k != key);
        self.requests.push((key, request));
        self
    }

    /// Asks the user to fill in a form: `schema` is a flat JSON Schema object
    /// whose properties are primitives (string, number, integer, boolean,
    /// enums). Never ask for secrets in a form. Needs
    /// [`can_elicit_form`](ClientCapabilities::can_elicit_form).
    pub fn elicit_form(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        schema: Value,
    ) -> Self {
        let form = FormElicitation {
            message: message.into(),
            requested_schema: schema.to_string(),
        };
        self.request(
            key,
            InputRequest::Elicitation(ElicitationRequest::Form(form)),
        )
    }

    /// Asks the user to open `url` and complete a step there. Accepting only
    /// means the user agreed to go; check the outcome yourself on the retry.
    /// Needs [`can_elicit_url`](ClientCapabilities::can_elicit_url).
    pub fn elicit_url(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        let visit = UrlElicitation {
            message: message.into(),
            url: url.into(),
        };
        self.request(
            key,
            InputRequest::Elicitation(ElicitationRequest::Url(visit)),
        )
    }

    /// Asks the client's model for a completion. Needs
    /// [`can_sample`](ClientCapabilities::can_sample), and
    /// [`can_sample_with_tools`](ClientCapabilities::can_sample_with_tools)
    /// if the request has tools or a tool choice.
    pub fn sample(self, key: impl Into<String>, request: SamplingRequest) -> Self {
        self.request(key, InputRequest::Sampling(request))
    }

    /// Asks for the client's roots. Needs
    /// [`can_list_roots`](ClientCapabilities::can_list_roots).
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, InputRequest::Roots)
    }

    /// Carries `state`, serialized as JSON, to the next round, where
    /// [`Inputs::state`](crate::Inputs::state) reads it back. The host seals it:
    /// the client can neither read nor alter it.
    ///
    /// # Panics
    ///
    /// If `state` cannot be serialized to JSON (e.g. a map with non-string
    /// keys); that is a bug in the tool.
    pub fn state<S: Serialize + ?Sized>(self, state: &S) -> Self {
        self.state_bytes(state_json(state))
    }

    /// Carries these raw bytes to the next round
    /// ([`Inputs::state_bytes`](crate::Inputs::state_bytes)).
    pub fn state_bytes(mut self, bytes: Vec<u8>) -> Self {
        self.state = Some(bytes);
        self
    }

    /// Drops the requests `client` cannot answer. A tool that can do without
    /// some answers sends only what the client supports.
    pub fn retain_supported(mut self, client: &ClientCapabilities) -> Self {
        self.requests
            .retain(|(_, request)| client.supports(request));
        self
    }

    /// The request under `key`, if any.
    pub fn requested(&self, key: &str) -> Option<&InputRequest> {
        self.requests
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, request)| request)
    }
}

impl SamplingRequest {
    /// A request for at most `max_tokens` tokens, with no messages yet.
    pub fn new(max_tokens: u32) -> Self {
        Self {
            messages: Vec::new(),
            max_tokens,
            system_prompt: None,
            model_preferences: None,
            include_context: None,
            temperature: None,
            stop_sequences: Vec::new(),
            metadata: None,
            tools: Vec::new(),
            tool_choice: None,
        }
    }

    /// Adds a user message with this text.
    pub fn user(self, text: impl Into<String>) -> Self {
        self.message(SamplingMessage::user(text))
    }

    /// Adds an assistant message with this text.
    pub fn assistant(self, text: impl Into<String>) -> Self {
        self.message(SamplingMessage::assistant(text))
    }

    /// Adds a message.
    pub fn message(mut self, message: SamplingMessage) -> Self {
        self.messages.push(message);
        self
    }

    /// Sets the system prompt.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets the model preferences.
    pub fn model_preferences(mut self, preferences: ModelPreferences) -> Self {
        self.model_preferences = Some(preferences);
        self
    }

    /// Adds a model hint (a model or family name, e.g. `claude-3-sonnet`).
    pub fn model_hint(mut self, name: impl Into<String>) -> Self {
        let preferences = self.model_preferences.take().unwrap_or_default();
        self.model_preferences = Some(preferences.hint(name));
        self
    }

    /// Sets which context the client should add (anything but `None` is
    /// deprecated and needs
    /// [`can_sample_with_context`](ClientCapabilities::can_sample_with_context)).
    pub fn include_context(mut self, context: IncludeContext) -> Self {
        self.include_context = Some(context);
        self
    }

    /// Sets the sampling temperature.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// Adds a stop sequence.
    pub fn stop_sequence(mut self, stop: impl Into<String>) -> Self {
        self.stop_sequences.push(stop.into());
        self
    }

    /// Sets provider-specific metadata (a JSON object).
    pub fn metadata(mut self, metadata: Value) -> Self {
        self.metadata = Some(metadata.to_string());
        self
    }

    /// Offers the model a tool to call (needs
    /// [`can_sample_with_tools`](ClientCapabilities::can_sample_with_tools)).
    pub fn tool(mut self, tool: Tool) -> Self {
        self.tools.push(tool);
        self
    }

    /// Sets whether the model may or must call tools (needs
    /// [`can_sample_with_tools`](ClientCapabilities::can_sample_with_tools)).
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }
}

impl SamplingMessage {
    /// A message from `role` with these blocks.
    pub fn new(role: Role, content: Vec<SamplingContent>) -> Self {
        Self { role, content }
    }

    /// A user message with one text block.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, vec![SamplingContent::text(text)])
    }

    /// An assistant message with one text block.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, vec![SamplingContent::text(text)])
    }
}

impl SamplingContent {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(TextContent {
            text: text.into(),
            annotations: None,
        })
    }
}

impl Default for ModelPreferences {
    fn default() -> Self {
        Self::new()
    }
}

impl ModelPreferences {
    /// No preferences.
    pub fn new() -> Self {
        Self {
            hints: Vec::new(),
            cost_priority: None,
            speed_priority: None,
            intelligence_priority: None,
        }
    }

    /// Adds a hint naming a model or model family.
    pub fn hint(mut self, name: impl Into<String>) -> Self {
        self.hints.push(ModelHint {
            name: Some(name.into()),
        });
        self
    }

    /// How much cost matters, from 0.0 to 1.0.
    pub fn cost_priority(mut self, priority: f64) -> Self {
        self.cost_priority = Some(priority);
        self
    }

    /// How much speed matters, from 0.0 to 1.0.
    pub fn speed_priority(mut self, priority: f64) -> Self {
        self.speed_priority = Some(priority);
        self
    }

    /// How much capability matters, from 0.0 to 1.0.
    pub fn intelligence_priority(mut self, priority: f64) -> Self {
        self.intelligence_priority = Some(priority);
        self
    }
}
