//! Test-only guest for the bounds on what a component hands the host:
//! values a few bytes long in the guest that are huge or too deep on the
//! way out. Never deploy it.
//!
//! - The tool `nested {depth, place}` returns a JSON object `depth` levels
//!   deep (arrays inside it) in `place`: `structured` (the result's
//!   structured content), `embedded_meta` (the `_meta` of an embedded
//!   resource), `form` (a form elicitation's requested schema) or `sampling`
//!   (the `_meta` of a resource embedded in a tool result of a sampling
//!   request: the deepest place a reply carries a guest's value).
//! - The resource template `nested://{depth}` reads as a text whose `_meta`
//!   is `depth` levels deep.
//! - The tool's listed `_meta` is [`LISTED_DEPTH`] levels deep (1 as
//!   built), and the component serves the skill `skill://served/SKILL.md`,
//!   whose text is [`SKILL_MD`]. Listing runs with nothing granted, so the
//!   tests cannot tell the component anything else: they stamp copies of it
//!   with other digits or another `SKILL.md` of the same length in place
//!   (a frontmatter that is an alias bomb, say).

use airlock_guest::types::{
    ElicitationRequest, FormElicitation, InputRequest, Role, SamplingContent, ToolOutcome,
};
use airlock_guest::{
    Call, CallResult, ContentBlock, EmbeddedResource, InputRequired, Outcome, ReadOutcome,
    Resource, ResourceContents, ResourceRead, ResourceTemplate, Resources, SamplingMessage,
    SamplingRequest, Tool, Tools, json,
};
use serde::Deserialize;

struct Bombs;

/// The depth of the tool's listed `_meta`: the digits after the colon.
const LISTED_DEPTH: &str = "bombs-listed-meta-depth:000001";

/// The `SKILL.md` of the skill the component serves.
const SKILL_MD: &str = include_str!("SKILL.md");

/// The skill's `SKILL.md` URI.
const SKILL_URI: &str = "skill://served/SKILL.md";

/// [`LISTED_DEPTH`]'s number, read from the component's memory where the
/// copies stamp it (used directly, the compiler might fold it away).
fn listed_depth() -> usize {
    let stamped = std::hint::black_box(LISTED_DEPTH);
    stamped
        .rsplit(':')
        .next()
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(1)
}

/// A JSON object `depth` levels deep (at least 1): `{"n":[[…0…]]}`.
fn nested(depth: usize) -> String {
    let inner = depth.max(1) - 1;
    format!("{{\"n\":{}0{}}}", "[".repeat(inner), "]".repeat(inner))
}

#[derive(Deserialize)]
struct Nested {
    depth: usize,
    place: String,
}

impl Tools for Bombs {
    fn list() -> Vec<Tool> {
        vec![Tool {
            meta: Some(nested(listed_depth())),
            ..Tool::new(
                "nested",
                "Returns a JSON object `depth` levels deep in `place`.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {
                    "depth": { "type": "integer", "minimum": 1 },
                    "place": {
                        "type": "string",
                        "enum": ["structured", "embedded_meta", "form", "sampling"]
                    }
                },
                "required": ["depth", "place"]
            }))
        }]
    }

    fn call(call: Call) -> Outcome {
        let Nested { depth, place } = match call.args() {
            Ok(args) => args,
            Err(error) => return error.into(),
        };
        let value = nested(depth);
        let embedded = || EmbeddedResource {
            contents: ResourceContents {
                meta: Some(value.clone()),
                ..ResourceContents::text("nested://embedded", "embedded")
            },
            annotations: None,
        };
        match place.as_str() {
            "structured" => CallResult::text("nested")
                .with_structured_json(value.clone())
                .into(),
            "embedded_meta" => CallResult::text("nested").with_resource(embedded()).into(),
            "form" => InputRequired::new()
                .request(
                    "answer",
                    InputRequest::Elicitation(ElicitationRequest::Form(FormElicitation {
                        message: "A form whose schema nests deep.".to_owned(),
                        requested_schema: value.clone(),
                    })),
                )
                .into(),
            // Two blocks, so that the message's content is an array: the
            // deepest shape.
            "sampling" => InputRequired::new()
                .sample(
                    "model",
                    SamplingRequest::new(16).message(SamplingMessage {
                        role: Role::User,
                        content: vec![
                            SamplingContent::Text(airlock_guest::types::TextContent {
                                text: "The tool said:".to_owned(),
                                annotations: None,
                            }),
                            SamplingContent::ToolResult(ToolOutcome {
                                tool_use_id: "use-1".to_owned(),
                                content: vec![ContentBlock::EmbeddedResource(embedded())],
                                structured_content: None,
                                is_error: None,
                            }),
                        ],
                    }),
                )
                .into(),
            other => Outcome::from(airlock_guest::Error::new(format!(
                "unknown place `{other}`"
            ))),
        }
    }
}

impl Resources for Bombs {
    fn list() -> Vec<Resource> {
        vec![Resource::new(SKILL_URI, "served").mime_type("text/markdown")]
    }

    fn templates() -> Vec<ResourceTemplate> {
        vec![
            ResourceTemplate::new("nested://{depth}", "nested").description("`_meta` `depth` deep"),
        ]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        if read.uri() == SKILL_URI {
            let text = std::hint::black_box(SKILL_MD);
            return ResourceContents::text(SKILL_URI, text)
                .mime_type("text/markdown")
                .into();
        }
        let Some(depth) = read.variable("depth").and_then(|d| d.parse().ok()) else {
            return ReadOutcome::NotFound;
        };
        ResourceContents {
            meta: Some(nested(depth)),
            ..ResourceContents::text(read.uri(), "nested")
        }
        .into()
    }
}

airlock_guest::export! {
    tools: Bombs,
    resources: Bombs,
}
