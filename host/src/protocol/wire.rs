//! WIT values ⇄ MCP JSON.
//!
//! Outgoing: tool descriptions, content blocks and input requests become the
//! 2026-07-28 wire shapes (bytes become Base64, JSON text is checked and then
//! embedded verbatim). Incoming: the client's `inputResponses` become WIT
//! input responses. Every JSON text a guest returns is validated here, valid
//! and at most `max_depth` arrays and objects deep (`--max-json-depth`, see
//! [`crate::guest_json`]), so a guest can never make Airlock emit malformed
//! JSON, nor JSON nested too deep for a client to parse.

use base64::Engine as _;
use base64::display::Base64Display;
use base64::engine::general_purpose::STANDARD;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

pub use crate::guest_json::GuestValueError;
use crate::guest_json::{check_meta, json_object, json_text};
use crate::registry::skills::Skill;
use crate::runtime::{wit, wit_completions, wit_prompts, wit_resources};

/// An `inputResponses` entry that is not a valid answer.
#[derive(Debug, thiserror::Error)]
#[error("inputResponses[\"{key}\"]: {problem}")]
pub struct ResponseError {
    /// The key of the bad entry.
    pub key: String,
    /// What is wrong with it.
    pub problem: String,
}

/// A guest's `meta` text, serialized verbatim as `_meta` once it is checked
/// to be a JSON object at most `max_depth` deep; anything else fails the
/// encoding, so an item or result carrying it is refused like any other
/// invalid outcome.
pub struct Meta<'a> {
    text: &'a str,
    max_depth: usize,
}

impl<'a> Meta<'a> {
    fn of(meta: &'a Option<String>, max_depth: usize) -> Option<Meta<'a>> {
        meta.as_deref().map(|text| Meta { text, max_depth })
    }
}

impl Serialize for Meta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        check_meta(self.text, self.max_depth)
            .map_err(serde::ser::Error::custom)?
            .serialize(serializer)
    }
}

/// Bytes serialized as standard Base64 text.
pub struct Base64<'a>(&'a [u8]);

impl Serialize for Base64<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(&Base64Display::new(self.0, &STANDARD))
    }
}

fn role(role: wit::Role) -> &'static str {
    match role {
        wit::Role::User => "user",
        wit::Role::Assistant => "assistant",
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations<'a> {
    #[serde(skip_serializing_if = "Audience::is_empty")]
    audience: Audience,
    #[serde(skip_serializing_if = "Option::is_none")]
    priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_modified: Option<&'a str>,
}

/// An audience: each role at most once, in the order first given (a
/// guest's list may repeat roles; the wire never does).
#[derive(Default)]
struct Audience([Option<wit::Role>; 2]);

impl Audience {
    fn of(roles: &[wit::Role]) -> Audience {
        let mut audience = Audience::default();
        let mut slots = 0;
        for role in roles {
            if slots == audience.0.len() {
                break;
            }
            if !audience.0[..slots].contains(&Some(*role)) {
                audience.0[slots] = Some(*role);
                slots += 1;
            }
        }
        audience
    }

    fn is_empty(&self) -> bool {
        self.0[0].is_none()
    }
}

impl Serialize for Audience {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().flatten().map(|r| role(*r)))
    }
}

fn annotations(a: &Option<wit::Annotations>) -> Option<Annotations<'_>> {
    a.as_ref().map(|a| Annotations {
        audience: Audience::of(&a.audience),
        priority: a.priority,
        last_modified: a.last_modified.as_deref(),
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents<'a> {
    uri: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    blob: Option<Base64<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

/// A `ReadResourceResult`'s own members.
#[derive(Serialize)]
pub struct ReadResourceResult<'a> {
    /// What was read.
    pub contents: Vec<ResourceContents<'a>>,
}

/// The contents of a file the server holds itself (a skill's): `text` when
/// it is sent as text, else `bytes` as Base64.
pub fn file_contents<'a>(
    uri: &'a str,
    mime_type: &'a str,
    text: Option<&'a str>,
    bytes: &'a [u8],
) -> ResourceContents<'a> {
    ResourceContents {
        uri,
        mime_type: Some(mime_type),
        text,
        blob: text.is_none().then_some(Base64(bytes)),
        meta: None,
    }
}

/// Converts the contents of a resource (embedded, or read); its `_meta`
/// may nest `max_depth` deep.
pub fn resource_contents(c: &wit::ResourceContents, max_depth: usize) -> ResourceContents<'_> {
    let (text, blob) = match &c.body {
        wit::ResourceBody::Text(text) => (Some(text.as_str()), None),
        wit::ResourceBody::Blob(bytes) => (None, Some(Base64(bytes))),
    };
    ResourceContents {
        uri: &c.uri,
        mime_type: c.mime_type.as_deref(),
        text,
        blob,
        meta: Meta::of(&c.meta, max_depth),
    }
}

/// A content block on the wire (tool results, sampling messages).
#[derive(Serialize)]
#[serde(
    tag = "type",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum Content<'a> {
    /// `text`
    Text {
        text: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// `image`
    Image {
        data: Base64<'a>,
        mime_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// `audio`
    Audio {
        data: Base64<'a>,
        mime_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// `resource_link`
    ResourceLink {
        uri: &'a str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        mime_type: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// `resource`
    Resource {
        resource: ResourceContents<'a>,
        #[serde(skip_serializing_if = "Option::is_none")]
        annotations: Option<Annotations<'a>>,
    },
    /// `tool_use` (sampling only)
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: &'a RawValue,
    },
    /// `tool_result` (sampling only)
    ToolResult {
        tool_use_id: &'a str,
        content: Vec<Content<'a>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        structured_content: Option<&'a RawValue>,
        #[serde(skip_serializing_if = "Option::is_none")]
        is_error: Option<bool>,
    },
}

/// Converts one content block of a result; an embedded resource's `_meta`
/// may nest `max_depth` deep.
pub fn content(block: &wit::ContentBlock, max_depth: usize) -> Content<'_> {
    match block {
        wit::ContentBlock::Text(t) => Content::Text {
            text: &t.text,
            annotations: annotations(&t.annotations),
        },
        wit::ContentBlock::Image(m) => Content::Image {
            data: Base64(&m.data),
            mime_type: &m.mime_type,
            annotations: annotations(&m.annotations),
        },
        wit::ContentBlock::Audio(m) => Content::Audio {
            data: Base64(&m.data),
            mime_type: &m.mime_type,
            annotations: annotations(&m.annotations),
        },
        wit::ContentBlock::ResourceLink(l) => Content::ResourceLink {
            uri: &l.uri,
            name: &l.name,
            title: l.title.as_deref(),
            description: l.description.as_deref(),
            mime_type: l.mime_type.as_deref(),
            size: l.size,
            annotations: annotations(&l.annotations),
        },
        wit::ContentBlock::EmbeddedResource(r) => Content::Resource {
            resource: resource_contents(&r.contents, max_depth),
            annotations: annotations(&r.annotations),
        },
    }
}

fn sampling_content(
    block: &wit::SamplingContent,
    max_depth: usize,
) -> Result<Content<'_>, GuestValueError> {
    Ok(match block {
        wit::SamplingContent::Text(t) => Content::Text {
            text: &t.text,
            annotations: annotations(&t.annotations),
        },
        wit::SamplingContent::Image(m) => Content::Image {
            data: Base64(&m.data),
            mime_type: &m.mime_type,
            annotations: annotations(&m.annotations),
        },
        wit::SamplingContent::Audio(m) => Content::Audio {
            data: Base64(&m.data),
            mime_type: &m.mime_type,
            annotations: annotations(&m.annotations),
        },
        wit::SamplingContent::ToolUse(u) => Content::ToolUse {
            id: &u.id,
            name: &u.name,
            input: json_object(&u.input, "tool_use input", max_depth)?,
        },
        wit::SamplingContent::ToolResult(r) => Content::ToolResult {
            tool_use_id: &r.tool_use_id,
            content: r.content.iter().map(|c| content(c, max_depth)).collect(),
            structured_content: r
                .structured_content
                .as_deref()
                .map(|s| json_text(s, "tool_result structuredContent", max_depth))
                .transpose()?,
            is_error: r.is_error,
        },
    })
}

/// The `CallToolResult` of a complete call.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult<'a> {
    content: Vec<Content<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    structured_content: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    is_error: bool,
}

/// Converts a complete call result, checking its structured content (and,
/// as it is encoded, its embedded resources' `_meta`) within `max_depth`.
pub fn call_result(
    result: &wit::CallResult,
    max_depth: usize,
) -> Result<CallToolResult<'_>, GuestValueError> {
    Ok(CallToolResult {
        content: result
            .content
            .iter()
            .map(|c| content(c, max_depth))
            .collect(),
        structured_content: result
            .structured_content
            .as_deref()
            .map(|s| json_text(s, "structured content", max_depth))
            .transpose()?,
        is_error: result.is_error,
    })
}

/// A tool description as `tools/list` serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    input_schema: &'a RawValue,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<ToolAnnotations<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    read_only_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    destructive_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotent_hint: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    open_world_hint: Option<bool>,
}

/// Converts a tool description, checking its schemas (and, as it is
/// encoded, its `_meta`) within `max_depth`.
pub fn tool(tool: &wit::Tool, max_depth: usize) -> Result<Tool<'_>, GuestValueError> {
    Ok(Tool {
        name: &tool.name,
        title: tool.title.as_deref(),
        description: &tool.description,
        input_schema: json_object(&tool.input_schema, "inputSchema", max_depth)?,
        output_schema: tool
            .output_schema
            .as_deref()
            .map(|s| json_object(s, "outputSchema", max_depth))
            .transpose()?,
        annotations: tool.annotations.as_ref().map(|a| ToolAnnotations {
            title: a.title.as_deref(),
            read_only_hint: a.read_only_hint,
            destructive_hint: a.destructive_hint,
            idempotent_hint: a.idempotent_hint,
            open_world_hint: a.open_world_hint,
        }),
        meta: Meta::of(&tool.meta, max_depth),
    })
}

/// A prompt as `prompts/list` serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Prompt<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    description: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    arguments: Vec<PromptArgument<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptArgument<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    required: bool,
}

/// Converts a prompt description; its `_meta` may nest `max_depth` deep.
pub fn prompt(prompt: &wit_prompts::Prompt, max_depth: usize) -> Prompt<'_> {
    Prompt {
        name: &prompt.name,
        title: prompt.title.as_deref(),
        description: &prompt.description,
        arguments: prompt
            .arguments
            .iter()
            .map(|a| PromptArgument {
                name: &a.name,
                title: a.title.as_deref(),
                description: a.description.as_deref(),
                required: a.required,
            })
            .collect(),
        meta: Meta::of(&prompt.meta, max_depth),
    }
}

/// The `GetPromptResult` of a complete `prompts/get`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    messages: Vec<PromptMessage<'a>>,
}

#[derive(Serialize)]
pub struct PromptMessage<'a> {
    role: &'static str,
    content: Content<'a>,
}

/// Converts a rendered prompt; an embedded resource's `_meta` may nest
/// `max_depth` deep.
pub fn prompt_result(result: &wit_prompts::PromptResult, max_depth: usize) -> GetPromptResult<'_> {
    GetPromptResult {
        description: result.description.as_deref(),
        messages: result
            .messages
            .iter()
            .map(|m| PromptMessage {
                role: role(m.role),
                content: content(&m.content, max_depth),
            })
            .collect(),
    }
}

/// A resource as `resources/list` serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource<'a> {
    uri: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    size: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<Annotations<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

/// Converts a resource description; its `_meta` may nest `max_depth` deep.
pub fn resource(r: &wit_resources::Resource, max_depth: usize) -> Resource<'_> {
    Resource {
        uri: &r.uri,
        name: &r.name,
        title: r.title.as_deref(),
        description: r.description.as_deref(),
        mime_type: r.mime_type.as_deref(),
        size: r.size,
        annotations: annotations(&r.annotations),
        meta: Meta::of(&r.meta, max_depth),
    }
}

/// A resource template as `resources/templates/list` serves it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceTemplate<'a> {
    uri_template: &'a str,
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mime_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<Annotations<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta<'a>>,
}

/// Converts a resource template description; its `_meta` may nest
/// `max_depth` deep.
pub fn resource_template(
    t: &wit_resources::ResourceTemplate,
    max_depth: usize,
) -> ResourceTemplate<'_> {
    ResourceTemplate {
        uri_template: &t.uri_template,
        name: &t.name,
        title: t.title.as_deref(),
        description: t.description.as_deref(),
        mime_type: t.mime_type.as_deref(),
        annotations: annotations(&t.annotations),
        meta: Meta::of(&t.meta, max_depth),
    }
}

/// The `CompleteResult` of `completion/complete`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CompleteResult<'a> {
    completion: Completion<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion<'a> {
    values: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    total: Option<u32>,
    has_more: bool,
}

/// Most values one completion may carry (the spec's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// Converts a completion, keeping at most [`MAX_COMPLETION_VALUES`] values
/// (and saying there are more when it cuts).
pub fn complete_result(c: &wit_completions::Completion) -> CompleteResult<'_> {
    let values = &c.values[..c.values.len().min(MAX_COMPLETION_VALUES)];
    CompleteResult {
        completion: Completion {
            values,
            total: c.total,
            has_more: c.has_more || values.len() < c.values.len(),
        },
    }
}

/// An input request on the wire: `{method, params}` with no id.
#[derive(Serialize)]
#[serde(tag = "method", content = "params")]
pub enum InputRequest<'a> {
    /// `elicitation/create`
    #[serde(rename = "elicitation/create")]
    Elicitation(Elicitation<'a>),
    /// `sampling/createMessage`
    #[serde(rename = "sampling/createMessage")]
    Sampling(Sampling<'a>),
    /// `roots/list`
    #[serde(rename = "roots/list")]
    Roots(Empty),
}

impl InputRequest<'_> {
    /// Its method name.
    pub fn method(&self) -> &'static str {
        match self {
            InputRequest::Elicitation(_) => "elicitation/create",
            InputRequest::Sampling(_) => "sampling/createMessage",
            InputRequest::Roots(_) => "roots/list",
        }
    }

    /// Its params alone.
    pub fn params(&self) -> InputParams<'_, '_> {
        InputParams(self)
    }
}

/// The params of an [`InputRequest`], without its method.
pub struct InputParams<'r, 'a>(&'r InputRequest<'a>);

impl Serialize for InputParams<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            InputRequest::Elicitation(params) => params.serialize(serializer),
            InputRequest::Sampling(params) => params.serialize(serializer),
            InputRequest::Roots(params) => params.serialize(serializer),
        }
    }
}

/// An empty params object.
#[derive(Serialize)]
pub struct Empty {}

/// `elicitation/create` params.
#[derive(Serialize)]
#[serde(
    tag = "mode",
    rename_all = "lowercase",
    rename_all_fields = "camelCase"
)]
pub enum Elicitation<'a> {
    /// Form mode.
    Form {
        message: &'a str,
        requested_schema: &'a RawValue,
    },
    /// URL mode.
    Url { message: &'a str, url: &'a str },
}

/// `sampling/createMessage` params.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sampling<'a> {
    messages: Vec<SamplingMessage<'a>>,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system_prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model_preferences: Option<ModelPreferences<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    include_context: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    stop_sequences: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a RawValue>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<Tool<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<ToolChoice>,
}

#[derive(Serialize)]
pub struct SamplingMessage<'a> {
    role: &'static str,
    content: OneOrMany<Content<'a>>,
}

/// One item is sent as an object, several as an array (both are valid).
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            OneOrMany::One(item) => item.serialize(serializer),
            OneOrMany::Many(items) => items.serialize(serializer),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelPreferences<'a> {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    hints: Vec<ModelHint<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cost_priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    speed_priority: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    intelligence_priority: Option<f64>,
}

#[derive(Serialize)]
pub struct ModelHint<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<&'a str>,
}

#[derive(Serialize)]
pub struct ToolChoice {
    mode: &'static str,
}

fn sampling(
    request: &wit::SamplingRequest,
    max_depth: usize,
) -> Result<Sampling<'_>, GuestValueError> {
    let messages = request
        .messages
        .iter()
        .map(|m| {
            let mut blocks = m
                .content
                .iter()
                .map(|block| sampling_content(block, max_depth))
                .collect::<Result<Vec<_>, _>>()?;
            let content = if blocks.len() == 1 {
                OneOrMany::One(blocks.remove(0))
            } else {
                OneOrMany::Many(blocks)
            };
            Ok(SamplingMessage {
                role: role(m.role),
                content,
            })
        })
        .collect::<Result<Vec<_>, GuestValueError>>()?;
    if messages.is_empty() {
        return Err(GuestValueError(
            "a sampling request needs at least one message".into(),
        ));
    }
    Ok(Sampling {
        messages,
        max_tokens: request.max_tokens,
        system_prompt: request.system_prompt.as_deref(),
        model_preferences: request
            .model_preferences
            .as_ref()
            .map(|p| ModelPreferences {
                hints: p
                    .hints
                    .iter()
                    .map(|h| ModelHint {
                        name: h.name.as_deref(),
                    })
                    .collect(),
                cost_priority: p.cost_priority,
                speed_priority: p.speed_priority,
                intelligence_priority: p.intelligence_priority,
            }),
        include_context: request.include_context.map(|c| match c {
            wit::IncludeContext::None => "none",
            wit::IncludeContext::ThisServer => "thisServer",
            wit::IncludeContext::AllServers => "allServers",
        }),
        temperature: request.temperature,
        stop_sequences: &request.stop_sequences,
        metadata: request
            .metadata
            .as_deref()
            .map(|m| json_object(m, "sampling metadata", max_depth))
            .transpose()?,
        tools: request
            .tools
            .iter()
            .map(|t| tool(t, max_depth))
            .collect::<Result<_, _>>()?,
        tool_choice: request.tool_choice.map(|c| ToolChoice {
            mode: match c {
                wit::ToolChoice::Auto => "auto",
                wit::ToolChoice::Required => "required",
                wit::ToolChoice::None => "none",
            },
        }),
    })
}

/// Converts one input request of an input-required outcome, checking its
/// JSON texts within `max_depth`.
pub fn input_request(
    request: &wit::InputRequest,
    max_depth: usize,
) -> Result<InputRequest<'_>, GuestValueError> {
    Ok(match request {
        wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(form)) => {
            InputRequest::Elicitation(Elicitation::Form {
                message: &form.message,
                requested_schema: json_object(
                    &form.requested_schema,
                    "requestedSchema",
                    max_depth,
                )?,
            })
        }
        wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(url)) => {
            InputRequest::Elicitation(Elicitation::Url {
                message: &url.message,
                url: &url.url,
            })
        }
        wit::InputRequest::Sampling(request) => {
            InputRequest::Sampling(sampling(request, max_depth)?)
        }
        wit::InputRequest::Roots => InputRequest::Roots(Empty {}),
    })
}

// ---------------------------------------------------------------------------
// Incoming: inputResponses.
// ---------------------------------------------------------------------------

/// Decodes `inputResponses`. Each value is recognised by its shape, which the
/// three result types keep disjoint: `ElicitResult` has `action`,
/// `ListRootsResult` has `roots`, `CreateMessageResult` has `role`, `content`
/// and `model`.
pub fn input_responses(value: &Value) -> Result<Vec<(String, wit::InputResponse)>, ResponseError> {
    let Value::Object(map) = value else {
        return Err(ResponseError {
            key: String::new(),
            problem: "inputResponses must be an object".into(),
        });
    };
    map.iter()
        .map(|(key, value)| {
            input_response(value)
                .map(|r| (key.clone(), r))
                .map_err(|problem| ResponseError {
                    key: key.clone(),
                    problem,
                })
        })
        .collect()
}

fn input_response(value: &Value) -> Result<wit::InputResponse, String> {
    let Value::Object(map) = value else {
        return Err(
            "must be an object (an ElicitResult, CreateMessageResult or ListRootsResult)".into(),
        );
    };
    if map.contains_key("action") {
        elicitation_response(map).map(wit::InputResponse::Elicitation)
    } else if map.contains_key("roots") {
        roots(map).map(wit::InputResponse::Roots)
    } else if map.contains_key("model") || map.contains_key("role") {
        sampling_response(map).map(wit::InputResponse::Sampling)
    } else {
        Err("is not an ElicitResult, CreateMessageResult or ListRootsResult".into())
    }
}

fn elicitation_response(map: &Map<String, Value>) -> Result<wit::ElicitationResponse, String> {
    let action = match map.get("action").and_then(Value::as_str) {
        Some("accept") => wit::ElicitationAction::Accept,
        Some("decline") => wit::ElicitationAction::Decline,
        Some("cancel") => wit::ElicitationAction::Cancel,
        _ => return Err("action must be \"accept\", \"decline\" or \"cancel\"".into()),
    };
    let content = match map.get("content") {
        None | Some(Value::Null) => None,
        Some(content @ Value::Object(_)) => Some(content.to_string()),
        Some(_) => return Err("content must be an object".into()),
    };
    Ok(wit::ElicitationResponse { action, content })
}

fn roots(map: &Map<String, Value>) -> Result<Vec<wit::Root>, String> {
    let Some(Value::Array(roots)) = map.get("roots") else {
        return Err("roots must be an array".into());
    };
    roots
        .iter()
        .map(|root| {
            let uri = root
                .get("uri")
                .and_then(Value::as_str)
                .ok_or("every root needs a string uri")?;
            let name = match root.get("name") {
                None | Some(Value::Null) => None,
                Some(Value::String(name)) => Some(name.clone()),
                Some(_) => return Err("a root name must be a string".to_string()),
            };
            Ok(wit::Root {
                uri: uri.to_owned(),
                name,
            })
        })
        .collect()
}

fn sampling_response(map: &Map<String, Value>) -> Result<wit::SamplingResponse, String> {
    let role = parse_role(map.get("role"))?;
    let model = map
        .get("model")
        .and_then(Value::as_str)
        .ok_or("model must be a string")?
        .to_owned();
    let content = match map.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .map(parse_sampling_content)
            .collect::<Result<_, _>>()?,
        Some(block @ Value::Object(_)) => vec![parse_sampling_content(block)?],
        _ => return Err("content must be a content block or an array of them".into()),
    };
    let stop_reason = match map.get("stopReason") {
        None | Some(Value::Null) => None,
        Some(Value::String(reason)) => Some(reason.clone()),
        Some(_) => return Err("stopReason must be a string".into()),
    };
    Ok(wit::SamplingResponse {
        role,
        content,
        model,
        stop_reason,
    })
}

fn parse_role(value: Option<&Value>) -> Result<wit::Role, String> {
    match value.and_then(Value::as_str) {
        Some("user") => Ok(wit::Role::User),
        Some("assistant") => Ok(wit::Role::Assistant),
        _ => Err("role must be \"user\" or \"assistant\"".into()),
    }
}

fn str_field<'a>(block: &'a Value, field: &str) -> Result<&'a str, String> {
    block
        .get(field)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("content block needs a string {field}"))
}

fn media(block: &Value) -> Result<wit::MediaContent, String> {
    let data = STANDARD
        .decode(str_field(block, "data")?)
        .map_err(|_| "data must be standard Base64".to_string())?;
    Ok(wit::MediaContent {
        data,
        mime_type: str_field(block, "mimeType")?.to_owned(),
        annotations: None,
    })
}

fn parse_content_block(block: &Value) -> Result<wit::ContentBlock, String> {
    Ok(match str_field(block, "type")? {
        "text" => wit::ContentBlock::Text(wit::TextContent {
            text: str_field(block, "text")?.to_owned(),
            annotations: None,
        }),
        "image" => wit::ContentBlock::Image(media(block)?),
        "audio" => wit::ContentBlock::Audio(media(block)?),
        "resource_link" => wit::ContentBlock::ResourceLink(wit::ResourceLink {
            uri: str_field(block, "uri")?.to_owned(),
            name: str_field(block, "name")?.to_owned(),
            title: block
                .get("title")
                .and_then(Value::as_str)
                .map(str::to_owned),
            description: block
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_owned),
            mime_type: block
                .get("mimeType")
                .and_then(Value::as_str)
                .map(str::to_owned),
            size: block.get("size").and_then(Value::as_u64),
            annotations: None,
        }),
        "resource" => {
            let resource = block
                .get("resource")
                .ok_or("a resource block needs resource")?;
            let body = match (
                resource.get("text").and_then(Value::as_str),
                resource.get("blob").and_then(Value::as_str),
            ) {
                (Some(text), _) => wit::ResourceBody::Text(text.to_owned()),
                (None, Some(blob)) => wit::ResourceBody::Blob(
                    STANDARD
                        .decode(blob)
                        .map_err(|_| "blob must be standard Base64".to_string())?,
                ),
                (None, None) => return Err("a resource needs text or blob".into()),
            };
            wit::ContentBlock::EmbeddedResource(wit::EmbeddedResource {
                contents: wit::ResourceContents {
                    uri: str_field(resource, "uri")?.to_owned(),
                    mime_type: resource
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .map(str::to_owned),
                    body,
                    meta: resource
                        .get("_meta")
                        .filter(|meta| meta.is_object())
                        .map(Value::to_string),
                },
                annotations: None,
            })
        }
        other => return Err(format!("unknown content type {other:?}")),
    })
}

fn parse_sampling_content(block: &Value) -> Result<wit::SamplingContent, String> {
    Ok(match str_field(block, "type")? {
        "tool_use" => wit::SamplingContent::ToolUse(wit::ToolUse {
            id: str_field(block, "id")?.to_owned(),
            name: str_field(block, "name")?.to_owned(),
            input: block
                .get("input")
                .filter(|i| i.is_object())
                .ok_or("tool_use input must be an object")?
                .to_string(),
        }),
        "tool_result" => wit::SamplingContent::ToolResult(wit::ToolOutcome {
            tool_use_id: str_field(block, "toolUseId")?.to_owned(),
            content: match block.get("content") {
                Some(Value::Array(blocks)) => blocks
                    .iter()
                    .map(parse_content_block)
                    .collect::<Result<_, _>>()?,
                _ => return Err("tool_result content must be an array".into()),
            },
            structured_content: block.get("structuredContent").map(Value::to_string),
            is_error: block.get("isError").and_then(Value::as_bool),
        }),
        _ => match parse_content_block(block)? {
            wit::ContentBlock::Text(t) => wit::SamplingContent::Text(t),
            wit::ContentBlock::Image(m) => wit::SamplingContent::Image(m),
            wit::ContentBlock::Audio(m) => wit::SamplingContent::Audio(m),
            _ => {
                return Err(
                    "sampling content must be text, image, audio, tool_use or tool_result".into(),
                );
            }
        },
    })
}

/// A skill's `SKILL.md` as `resources/list` lists it: named and described
/// by its frontmatter.
pub fn skill_resource(skill: &Skill) -> impl Serialize + '_ {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Listed<'a> {
        uri: &'a str,
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        mime_type: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<usize>,
    }
    let skill_md = skill.files.iter().find(|file| file.uri == skill.uri);
    Listed {
        uri: &skill.uri,
        name: &skill.name,
        description: skill.frontmatter.get("description").and_then(Value::as_str),
        mime_type: skill_md.map_or("text/markdown", |file| file.mime_type),
        size: skill_md.map(|file| file.bytes.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The default depth limit.
    const DEPTH: usize = crate::guest_json::DEFAULT_MAX_DEPTH;

    fn to_json(value: &impl Serialize) -> Value {
        serde_json::to_value(value).unwrap()
    }

    #[test]
    fn content_blocks_take_the_wire_shapes() {
        let blocks = [
            wit::ContentBlock::Text(wit::TextContent {
                text: "hi".into(),
                annotations: None,
            }),
            wit::ContentBlock::Image(wit::MediaContent {
                data: vec![1, 2, 3],
                mime_type: "image/png".into(),
                annotations: Some(wit::Annotations {
                    audience: vec![wit::Role::User],
                    priority: Some(0.5),
                    last_modified: None,
                }),
            }),
            wit::ContentBlock::EmbeddedResource(wit::EmbeddedResource {
                contents: wit::ResourceContents {
                    uri: "test://r".into(),
                    mime_type: Some("text/plain".into()),
                    body: wit::ResourceBody::Text("t".into()),
                    meta: None,
                },
                annotations: None,
            }),
        ];
        let json: Vec<Value> = blocks.iter().map(|b| to_json(&content(b, DEPTH))).collect();
        assert_eq!(
            json,
            vec![
                json!({"type": "text", "text": "hi"}),
                json!({"type": "image", "data": "AQID", "mimeType": "image/png", "annotations": {"audience": ["user"], "priority": 0.5}}),
                json!({"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "t"}}),
            ]
        );
    }

    #[test]
    fn resource_contents_carry_meta_only_as_an_object() {
        let contents = |meta: &str| wit::ResourceContents {
            uri: "ui://app".into(),
            mime_type: Some("text/html;profile=mcp-app".into()),
            body: wit::ResourceBody::Text("<p>".into()),
            meta: Some(meta.into()),
        };
        let good = contents(r#"{"ui":{"prefersBorder":true}}"#);
        assert_eq!(
            to_json(&resource_contents(&good, DEPTH)),
            json!({"uri": "ui://app", "mimeType": "text/html;profile=mcp-app", "text": "<p>",
                "_meta": {"ui": {"prefersBorder": true}}})
        );
        for bad in ["[]", "1", "{oops"] {
            let err = serde_json::to_string(&resource_contents(&contents(bad), DEPTH)).unwrap_err();
            assert!(err.to_string().contains("_meta"), "{bad}: {err}");
        }
    }

    #[test]
    fn results_check_structured_content() {
        let ok = wit::CallResult {
            content: vec![],
            structured_content: Some(r#"{"a":1}"#.into()),
            is_error: true,
        };
        assert_eq!(
            to_json(&call_result(&ok, DEPTH).unwrap()),
            json!({"content": [], "structuredContent": {"a": 1}, "isError": true})
        );
        let bad = wit::CallResult {
            content: vec![],
            structured_content: Some("{oops".into()),
            is_error: false,
        };
        assert!(call_result(&bad, DEPTH).is_err());
    }

    /// An object holding arrays, `depth` levels in all.
    fn nested(depth: usize) -> String {
        let inner = depth - 1;
        format!("{{\"n\":{}0{}}}", "[".repeat(inner), "]".repeat(inner))
    }

    #[test]
    fn every_json_text_of_an_answer_is_bounded_in_depth() {
        const LIMIT: usize = 8;
        let embedded = |depth: usize| {
            wit::ContentBlock::EmbeddedResource(wit::EmbeddedResource {
                contents: wit::ResourceContents {
                    uri: "test://r".into(),
                    mime_type: None,
                    body: wit::ResourceBody::Text("t".into()),
                    meta: Some(nested(depth)),
                },
                annotations: None,
            })
        };
        // What converts and encodes at `depth`, or the error saying why not.
        let answers = |depth: usize| -> Vec<(&'static str, Result<String, String>)> {
            let encoded =
                |value: Result<String, serde_json::Error>| value.map_err(|e| e.to_string());
            let result = wit::CallResult {
                content: vec![],
                structured_content: Some(nested(depth)),
                is_error: false,
            };
            let with_embedded = wit::CallResult {
                content: vec![embedded(depth)],
                structured_content: None,
                is_error: false,
            };
            let prompt = wit_prompts::PromptResult {
                description: None,
                messages: vec![wit_prompts::PromptMessage {
                    role: wit::Role::User,
                    content: embedded(depth),
                }],
            };
            let read = wit::ResourceContents {
                uri: "test://r".into(),
                mime_type: None,
                body: wit::ResourceBody::Text("t".into()),
                meta: Some(nested(depth)),
            };
            let form = wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(
                wit::FormElicitation {
                    message: "m".into(),
                    requested_schema: nested(depth),
                },
            ));
            let sampling = |content: wit::SamplingContent, metadata: Option<String>| {
                wit::InputRequest::Sampling(wit::SamplingRequest {
                    messages: vec![wit::SamplingMessage {
                        role: wit::Role::User,
                        content: vec![content],
                    }],
                    max_tokens: 1,
                    system_prompt: None,
                    model_preferences: None,
                    include_context: None,
                    temperature: None,
                    stop_sequences: vec![],
                    metadata,
                    tools: vec![],
                    tool_choice: None,
                })
            };
            let text = || {
                wit::SamplingContent::Text(wit::TextContent {
                    text: "t".into(),
                    annotations: None,
                })
            };
            let tool_result = |content, structured_content| {
                wit::SamplingContent::ToolResult(wit::ToolOutcome {
                    tool_use_id: "u".into(),
                    content,
                    structured_content,
                    is_error: None,
                })
            };
            let requests = [
                ("requestedSchema", form),
                ("sampling metadata", sampling(text(), Some(nested(depth)))),
                (
                    "tool_use input",
                    sampling(
                        wit::SamplingContent::ToolUse(wit::ToolUse {
                            id: "u".into(),
                            name: "t".into(),
                            input: nested(depth),
                        }),
                        None,
                    ),
                ),
                (
                    "tool_result structuredContent",
                    sampling(tool_result(vec![], Some(nested(depth))), None),
                ),
                (
                    "_meta",
                    sampling(tool_result(vec![embedded(depth)], None), None),
                ),
            ];
            let mut answers = vec![
                (
                    "structured content",
                    call_result(&result, LIMIT)
                        .map_err(|e| e.0)
                        .and_then(|r| encoded(serde_json::to_string(&r))),
                ),
                (
                    "_meta",
                    call_result(&with_embedded, LIMIT)
                        .map_err(|e| e.0)
                        .and_then(|r| encoded(serde_json::to_string(&r))),
                ),
                (
                    "_meta",
                    encoded(serde_json::to_string(&prompt_result(&prompt, LIMIT))),
                ),
                (
                    "_meta",
                    encoded(serde_json::to_string(&resource_contents(&read, LIMIT))),
                ),
            ];
            for (what, request) in requests {
                let converted = input_request(&request, LIMIT)
                    .map_err(|e| e.0)
                    .and_then(|r| encoded(serde_json::to_string(&r.params())));
                answers.push((what, converted));
            }
            answers
        };
        for (what, answer) in answers(LIMIT) {
            assert!(answer.is_ok(), "{what} at the limit: {answer:?}");
        }
        for (what, answer) in answers(LIMIT + 1) {
            assert_eq!(
                answer.unwrap_err(),
                format!("{what} nests arrays and objects deeper than 8 levels (--max-json-depth)")
            );
        }
    }

    #[test]
    fn input_requests_take_the_wire_shapes() {
        let form =
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(wit::FormElicitation {
                message: "Name?".into(),
                requested_schema: r#"{"type":"object","properties":{"name":{"type":"string"}}}"#
                    .into(),
            }));
        assert_eq!(
            to_json(&input_request(&form, DEPTH).unwrap()),
            json!({"method": "elicitation/create", "params": {
            "mode": "form", "message": "Name?", "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}})
        );
        assert_eq!(
            to_json(&input_request(&wit::InputRequest::Roots, DEPTH).unwrap()),
            json!({"method": "roots/list", "params": {}})
        );
        let sampling = wit::InputRequest::Sampling(wit::SamplingRequest {
            messages: vec![wit::SamplingMessage {
                role: wit::Role::User,
                content: vec![wit::SamplingContent::Text(wit::TextContent {
                    text: "Hi".into(),
                    annotations: None,
                })],
            }],
            max_tokens: 50,
            system_prompt: None,
            model_preferences: None,
            include_context: Some(wit::IncludeContext::None),
            temperature: None,
            stop_sequences: vec![],
            metadata: None,
            tools: vec![],
            tool_choice: None,
        });
        assert_eq!(
            to_json(&input_request(&sampling, DEPTH).unwrap()),
            json!({"method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "Hi"}}], "maxTokens": 50, "includeContext": "none"}})
        );
        let bad =
            wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(wit::FormElicitation {
                message: "x".into(),
                requested_schema: "[1]".into(),
            }));
        assert!(input_request(&bad, DEPTH).is_err());
    }

    #[test]
    fn input_responses_are_recognised_by_shape() {
        let responses = input_responses(&json!({
            "e": {"action": "accept", "content": {"name": "Alice"}},
            "s": {"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m", "stopReason": "endTurn"},
            "r": {"roots": [{"uri": "file:///a", "name": "A"}]},
        })).unwrap();
        let by_key = |k: &str| &responses.iter().find(|(key, _)| key == k).unwrap().1;
        assert!(
            matches!(by_key("e"), wit::InputResponse::Elicitation(e) if e.content.as_deref() == Some(r#"{"name":"Alice"}"#))
        );
        assert!(
            matches!(by_key("s"), wit::InputResponse::Sampling(s) if s.model == "m" && s.content.len() == 1)
        );
        assert!(
            matches!(by_key("r"), wit::InputResponse::Roots(r) if r.len() == 1 && r[0].name.as_deref() == Some("A"))
        );
    }

    #[test]
    fn malformed_input_responses_name_the_key() {
        for bad in [
            json!({"user_name": 12345}),
            json!({"k": {"action": "maybe"}}),
            json!({"k": {"roots": "x"}}),
            json!({"k": {}}),
        ] {
            assert!(input_responses(&bad).is_err(), "{bad} should be refused");
        }
        assert_eq!(
            input_responses(&json!({"user_name": 1})).unwrap_err().key,
            "user_name"
        );
        assert!(input_responses(&Value::Null).is_err());
    }
}
