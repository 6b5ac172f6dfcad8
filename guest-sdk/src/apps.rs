//! MCP Apps (`io.modelcontextprotocol/ui`): an HTML App, served as a `ui://`
//! resource, that the client renders in a sandboxed frame for a tool's
//! results. The App may call tools back through its host.
//!
//! The helpers write the `_meta.ui` members for you:
//!
//! ```
//! use airlock_guest::apps::{AppCsp, AppUi, Visibility};
//! use airlock_guest::{Resource, ResourceContents, Tool};
//!
//! // The tool names its App; the App alone may call `refresh`.
//! let tool = Tool::new("show", "Shows the table.").app("ui://table/app.html");
//! let refresh = Tool::new("refresh", "Reloads the table.")
//!     .app("ui://table/app.html")
//!     .visibility(&[Visibility::App]);
//! // The App's HTML, listed and read with the App MIME type and its settings.
//! let ui = AppUi {
//!     csp: Some(AppCsp { connect_domains: vec!["https://api.example.com".into()], ..AppCsp::default() }),
//!     prefers_border: Some(true),
//!     ..AppUi::default()
//! };
//! let listed = Resource::app("ui://table/app.html", "table").app_ui(&ui);
//! let read = ResourceContents::app("ui://table/app.html", "<!doctype html>...").app_ui(&ui);
//! assert_eq!(read.mime_type.as_deref(), Some(airlock_guest::apps::APP_MIME_TYPE));
//! ```

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use crate::types::{Resource, ResourceContents, Tool};

/// The MIME type of an App's HTML (`text/html;profile=mcp-app`).
pub const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// Who may call a tool that has an App (`_meta.ui.visibility`); both when
/// unset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    /// The model (the tool is listed to it).
    Model,
    /// The App, through its host.
    App,
}

/// How a client should present an App: its resource's `_meta.ui`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppUi {
    /// The origins the App may reach; none unless set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csp: Option<AppCsp>,
    /// The browser permissions the App asks for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permissions: Option<AppPermissions>,
    /// A dedicated origin for the App, if the client supports one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether the App prefers the client to draw a border around it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prefers_border: Option<bool>,
}

/// The Content Security Policy origins of an App (`_meta.ui.csp`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppCsp {
    /// Origins for `fetch`, XHR and WebSocket.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub connect_domains: Vec<String>,
    /// Origins for scripts, styles, images, fonts and media.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_domains: Vec<String>,
    /// Origins for nested frames.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub frame_domains: Vec<String>,
    /// Origins allowed as the document's base URI.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub base_uri_domains: Vec<String>,
}

/// The browser permissions an App asks for (`_meta.ui.permissions`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AppPermissions {
    /// The camera.
    pub camera: bool,
    /// The microphone.
    pub microphone: bool,
    /// The location.
    pub geolocation: bool,
    /// Writing to the clipboard.
    pub clipboard_write: bool,
}

impl Serialize for AppPermissions {
    /// `{"camera": {}, ...}`: one empty object for each permission asked.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let asked = [
            ("camera", self.camera),
            ("microphone", self.microphone),
            ("geolocation", self.geolocation),
            ("clipboardWrite", self.clipboard_write),
        ];
        serializer.collect_map(
            asked
                .into_iter()
                .filter(|(_, asked)| *asked)
                .map(|(name, _)| (name, Map::new())),
        )
    }
}

impl Tool {
    /// Names the App that renders this tool's results: the `ui://` resource
    /// at `resource_uri` (`_meta.ui.resourceUri`).
    pub fn app(mut self, resource_uri: impl Into<String>) -> Self {
        set_ui(
            &mut self.meta,
            [("resourceUri", Value::String(resource_uri.into()))],
        );
        self
    }

    /// Says who may call this tool (`_meta.ui.visibility`): e.g. only
    /// [`Visibility::App`] for a tool the App calls and the model need not see.
    pub fn visibility(mut self, visibility: &[Visibility]) -> Self {
        let visibility = serde_json::to_value(visibility).unwrap_or_default();
        set_ui(&mut self.meta, [("visibility", visibility)]);
        self
    }
}

impl Resource {
    /// An App's HTML at `uri` (a `ui://` URI), called `name`, listed with
    /// the App MIME type.
    pub fn app(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource::new(uri, name).mime_type(APP_MIME_TYPE)
    }

    /// Sets how the App is presented (`_meta.ui`), as listed.
    pub fn app_ui(mut self, ui: &AppUi) -> Self {
        set_ui(&mut self.meta, members(ui));
        self
    }
}

impl ResourceContents {
    /// An App's HTML at `uri`, read with the App MIME type.
    pub fn app(uri: impl Into<String>, html: impl Into<String>) -> Self {
        ResourceContents::text(uri, html).mime_type(APP_MIME_TYPE)
    }

    /// Sets how the App is presented (`_meta.ui`), as read; the client
    /// prefers it to the listed one.
    pub fn app_ui(mut self, ui: &AppUi) -> Self {
        set_ui(&mut self.meta, members(ui));
        self
    }
}

/// The members of `ui` as a JSON object.
fn members(ui: &AppUi) -> Map<String, Value> {
    match serde_json::to_value(ui) {
        Ok(Value::Object(members)) => members,
        _ => Map::new(),
    }
}

/// Sets `members` in the `ui` object of `meta` (a JSON object as text),
/// keeping what else `meta` holds.
fn set_ui<K: Into<String>>(
    meta: &mut Option<String>,
    members: impl IntoIterator<Item = (K, Value)>,
) {
    let mut object = match meta.as_deref().map(serde_json::from_str) {
        Some(Ok(Value::Object(object))) => object,
        _ => Map::new(),
    };
    let ui = object
        .entry("ui")
        .or_insert_with(|| Value::Object(Map::new()));
    if !ui.is_object() {
        *ui = Value::Object(Map::new());
    }
    if let Value::Object(ui) = ui {
        ui.extend(members.into_iter().map(|(key, value)| (key.into(), value)));
    }
    *meta = Some(Value::Object(object).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn meta(text: &Option<String>) -> Value {
        serde_json::from_str(text.as_deref().expect("a meta")).unwrap()
    }

    #[test]
    fn a_tool_names_its_app_and_who_may_call_it() {
        let tool = Tool::new("t", "d")
            .meta(Map::from_iter([("other".to_owned(), json!(1))]))
            .app("ui://a/app.html")
            .visibility(&[Visibility::App]);
        assert_eq!(
            meta(&tool.meta),
            json!({"other": 1, "ui": {"resourceUri": "ui://a/app.html", "visibility": ["app"]}})
        );
    }

    #[test]
    fn an_app_resource_carries_its_mime_type_and_ui() {
        let ui = AppUi {
            csp: Some(AppCsp {
                connect_domains: vec!["https://api.example.com".into()],
                ..AppCsp::default()
            }),
            permissions: Some(AppPermissions {
                clipboard_write: true,
                ..AppPermissions::default()
            }),
            domain: None,
            prefers_border: Some(false),
        };
        let expected = json!({"ui": {
            "csp": {"connectDomains": ["https://api.example.com"]},
            "permissions": {"clipboardWrite": {}},
            "prefersBorder": false,
        }});
        let listed = Resource::app("ui://a/app.html", "a").app_ui(&ui);
        assert_eq!(listed.mime_type.as_deref(), Some(APP_MIME_TYPE));
        assert_eq!(meta(&listed.meta), expected);
        let read = ResourceContents::app("ui://a/app.html", "<p>").app_ui(&ui);
        assert_eq!(read.mime_type.as_deref(), Some(APP_MIME_TYPE));
        assert_eq!(read.as_text(), Some("<p>"));
        assert_eq!(meta(&read.meta), expected);
    }
}
