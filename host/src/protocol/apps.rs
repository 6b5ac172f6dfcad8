//! The MCP Apps extension (`io.modelcontextprotocol/ui`, SEP-1865): a tool
//! names, in its `_meta.ui.resourceUri`, a `ui://` resource whose HTML the
//! client renders in a sandboxed frame. Components author all of it with
//! `meta` on their tools and resources; the host passes it through and
//! declares the extension only while some component serves an App, a
//! resource or template of the App MIME type.

use serde_json::Value;

use crate::registry::Registry;

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an App's HTML.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The extension's settings as `server/discover` declares them.
pub(super) fn declared() -> Value {
    serde_json::json!({ "mimeTypes": [MIME_TYPE] })
}

/// Whether some component serves an App.
pub(super) fn served(registry: &Registry) -> bool {
    let resources = registry.resources().iter().map(|r| &r.item().mime_type);
    let templates = registry
        .templates()
        .iter()
        .map(|t| &t.item().listed.mime_type);
    resources
        .chain(templates)
        .any(|mime_type| mime_type.as_deref().is_some_and(is_app))
}

/// Whether `mime_type` is the App MIME type (spaces and case aside).
fn is_app(mime_type: &str) -> bool {
    let mime_type: String = mime_type.split_whitespace().collect();
    mime_type.eq_ignore_ascii_case(MIME_TYPE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_app_mime_type_is_recognised_however_spelled() {
        assert!(is_app("text/html;profile=mcp-app"));
        assert!(is_app("Text/HTML; profile=mcp-app"));
        assert!(!is_app("text/html"));
        assert!(!is_app("text/html;profile=other"));
    }
}
