//! Resources: their descriptions, one read, and its outcome.

use crate::Inputs;
use crate::inputs::rounds;
use serde_json::{Map, Value};

use crate::types::{
    Annotations, EmbeddedResource, InputRequired, ReadOutcome, Resource, ResourceBody,
    ResourceContents, ResourceTemplate, Round, TemplateMatch,
};

/// One round of a `resources/read`: the URI, the template it matched (if it
/// is not a listed resource), and what this round knows.
///
/// Like a [`Call`](crate::Call), it dereferences to [`Inputs`]:
/// `read.elicitation("key")`, `read.state::<S>()`, `read.client()` work
/// exactly as for tools.
#[derive(Clone, Debug, PartialEq)]
pub struct ResourceRead {
    uri: String,
    template: Option<TemplateMatch>,
    inputs: Inputs,
}

rounds!(ResourceRead, "read");

impl ResourceRead {
    /// A first-round read of `uri` (a listed resource, no template), from a
    /// client that declared no capabilities. For unit tests.
    pub fn new(uri: impl Into<String>) -> Self {
        Self::from_parts(uri.into(), None, Round::default())
    }

    /// A read from its three parts, as the host passes them.
    pub fn from_parts(uri: String, template: Option<TemplateMatch>, round: Round) -> Self {
        Self {
            uri,
            template,
            inputs: Inputs::new(round),
        }
    }

    /// The same read, matched by template `uri_template` with these values of
    /// its variables. For unit tests.
    pub fn with_template<K: Into<String>, V: Into<String>>(
        mut self,
        uri_template: impl Into<String>,
        variables: impl IntoIterator<Item = (K, V)>,
    ) -> Self {
        self.template = Some(TemplateMatch {
            uri_template: uri_template.into(),
            variables: variables
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        });
        self
    }

    /// The URI to read.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The `uri-template` the URI matched, as listed; `None` for a listed
    /// resource.
    pub fn template(&self) -> Option<&str> {
        self.template
            .as_ref()
            .map(|matched| matched.uri_template.as_str())
    }

    /// The template the URI matched with the values of its variables.
    pub fn template_match(&self) -> Option<&TemplateMatch> {
        self.template.as_ref()
    }

    /// The (percent-decoded) value of template variable `name`; `None` for a
    /// listed resource or a name the template does not have.
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.template
            .as_ref()?
            .variables
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl Resource {
    /// The resource at `uri` (an absolute URI, unique across the server),
    /// called `name`.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            annotations: None,
            meta: None,
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

    /// Sets the annotations.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets its `_meta`, a JSON object sent as it is; replaces any set
    /// before.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Value::Object(meta).to_string());
        self
    }
}

impl ResourceTemplate {
    /// A family of resources named by `uri_template` (RFC 6570, simple
    /// `{name}` and reserved `{+name}` expansions, e.g.
    /// `file:///notes/{id}`), called `name`.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            annotations: None,
            meta: None,
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

    /// Sets the MIME type every resource of the template shares.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets the annotations.
    pub fn annotations(mut self, annotations: Annotations) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Sets its `_meta`, a JSON object sent as it is; replaces any set
    /// before.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Value::Object(meta).to_string());
        self
    }
}

impl ResourceContents {
    /// Text contents of the resource at `uri`.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Text(text.into()),
            meta: None,
        }
    }

    /// Binary contents of the resource at `uri` (raw bytes; the host
    /// base64-encodes them as `blob`).
    pub fn blob(uri: impl Into<String>, data: Vec<u8>) -> Self {
        Self {
            uri: uri.into(),
            mime_type: None,
            body: ResourceBody::Blob(data),
            meta: None,
        }
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// Sets its `_meta`, a JSON object sent as it is; replaces any set
    /// before.
    pub fn meta(mut self, meta: Map<String, Value>) -> Self {
        self.meta = Some(Value::Object(meta).to_string());
        self
    }

    /// The text, if the contents are text.
    pub fn as_text(&self) -> Option<&str> {
        match &self.body {
            ResourceBody::Text(text) => Some(text),
            ResourceBody::Blob(_) => None,
        }
    }

    /// The bytes, if the contents are binary.
    pub fn as_blob(&self) -> Option<&[u8]> {
        match &self.body {
            ResourceBody::Text(_) => None,
            ResourceBody::Blob(data) => Some(data),
        }
    }
}

impl From<ResourceContents> for EmbeddedResource {
    /// The contents, embedded without annotations.
    fn from(contents: ResourceContents) -> Self {
        Self {
            contents,
            annotations: None,
        }
    }
}

impl ReadOutcome {
    /// The contents, if this outcome completes the read.
    pub fn contents(&self) -> Option<&[ResourceContents]> {
        match self {
            Self::Complete(contents) => Some(contents),
            _ => None,
        }
    }

    /// What the read asks for, if this outcome asks for input.
    pub fn input_required(&self) -> Option<&InputRequired> {
        match self {
            Self::InputRequired(asked) => Some(asked),
            _ => None,
        }
    }

    /// Whether the resource was not found.
    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound)
    }
}

impl From<ResourceContents> for ReadOutcome {
    /// Completes with this one part.
    fn from(contents: ResourceContents) -> Self {
        Self::Complete(vec![contents])
    }
}

impl From<Vec<ResourceContents>> for ReadOutcome {
    /// Completes with these parts.
    fn from(contents: Vec<ResourceContents>) -> Self {
        Self::Complete(contents)
    }
}

impl From<InputRequired> for ReadOutcome {
    fn from(asked: InputRequired) -> Self {
        Self::InputRequired(asked)
    }
}

impl<T: Into<ReadOutcome>> From<Option<T>> for ReadOutcome {
    /// `None` is [`ReadOutcome::NotFound`], so a lookup can end a read:
    /// `lookup(read.uri()).into()`.
    fn from(found: Option<T>) -> Self {
        found.map_or(Self::NotFound, Into::into)
    }
}
