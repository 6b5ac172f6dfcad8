//! OAuth 2.0 protected-resource metadata (RFC 9728).
//!
//! A client that gets a 401 finds, in `WWW-Authenticate`, the URL of this
//! document; the document names the resource (this MCP endpoint) and the
//! authorization servers that issue tokens for it. Airlock serves it at
//! `/.well-known/oauth-protected-resource` followed by the resource's path
//! (`/.well-known/oauth-protected-resource/mcp`, what RFC 9728 §3.1 derives
//! from `https://host/mcp`), and at the bare well-known path, which MCP
//! clients also try.

use anyhow::bail;
use serde_json::json;

/// Where the document is served (plus the resource's path).
pub const WELL_KNOWN_PATH: &str = "/.well-known/oauth-protected-resource";

/// The metadata document and where it is published.
#[derive(Debug, Clone)]
pub struct ResourceMetadata {
    resource: String,
    url: String,
    suffixed_path: String,
    scopes: Vec<String>,
    document: Vec<u8>,
}

/// Splits an absolute http(s) URL into its origin (`scheme://authority`)
/// and the rest (path and query, possibly empty).
fn split_url<'a>(what: &str, url: &'a str) -> anyhow::Result<(&'a str, &'a str)> {
    let Some(after_scheme) = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
    else {
        bail!("{what} {url:?} must be an absolute https:// (or http://) URL");
    };
    if let Some(bad) = url
        .chars()
        .find(|c| !c.is_ascii_graphic() || matches!(c, '"' | '\\' | '#'))
    {
        bail!("{what} {url:?} must not contain {bad:?} (no spaces, quotes or fragment)");
    }
    let authority_len = after_scheme.find(['/', '?']).unwrap_or(after_scheme.len());
    let authority = &after_scheme[..authority_len];
    if authority.is_empty() || authority.contains('@') {
        bail!("{what} {url:?} needs a host (and no user info)");
    }
    let origin_len = url.len() - after_scheme.len() + authority_len;
    Ok((&url[..origin_len], &url[origin_len..]))
}

fn is_scope_token(scope: &str) -> bool {
    // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E )
    !scope.is_empty()
        && scope
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

impl ResourceMetadata {
    /// The document for `resource` (the URL clients use for this MCP
    /// endpoint), issued for by `authorization_servers`, with optional
    /// `scopes`.
    pub fn new(
        resource: &str,
        authorization_servers: &[String],
        scopes: &[String],
    ) -> anyhow::Result<Self> {
        let (origin, rest) = split_url("--oauth-resource", resource)?;
        if authorization_servers.is_empty() {
            bail!("--oauth-resource needs at least one --oauth-authorization-server");
        }
        for server in authorization_servers {
            split_url("--oauth-authorization-server", server)?;
        }
        if let Some(bad) = scopes.iter().find(|s| !is_scope_token(s)) {
            bail!("--oauth-scope {bad:?} is not a valid scope token");
        }
        let path = rest.split('?').next().unwrap_or("");
        let suffix = if rest == "/" { "" } else { rest };
        let url = format!("{origin}{WELL_KNOWN_PATH}{suffix}");
        let suffixed_path = if path == "/" {
            String::new()
        } else {
            format!("{WELL_KNOWN_PATH}{path}")
        };
        let mut document = json!({
            "resource": resource,
            "authorization_servers": authorization_servers,
            "bearer_methods_supported": ["header"],
        });
        if !scopes.is_empty() {
            document["scopes_supported"] = json!(scopes);
        }
        Ok(Self {
            resource: resource.to_owned(),
            url,
            suffixed_path,
            scopes: scopes.to_vec(),
            document: serde_json::to_vec(&document)?,
        })
    }

    /// The resource identifier (this MCP endpoint's URL).
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// Where clients fetch the document (named in `WWW-Authenticate`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The advertised scopes.
    pub fn scopes(&self) -> &[String] {
        &self.scopes
    }

    /// The JSON document.
    pub fn document(&self) -> &[u8] {
        &self.document
    }

    /// Whether a request for `path` gets the document: the bare well-known
    /// path, the one suffixed with the resource's path, or with `/mcp`
    /// (Airlock's own endpoint, for a resource URL a proxy rewrites).
    pub fn serves(&self, path: &str) -> bool {
        path == WELL_KNOWN_PATH
            || (!self.suffixed_path.is_empty() && path == self.suffixed_path)
            || path
                .strip_prefix(WELL_KNOWN_PATH)
                .is_some_and(|rest| rest == "/mcp")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers() -> Vec<String> {
        vec!["https://auth.example.com".to_owned()]
    }

    #[test]
    fn document_and_url_follow_rfc_9728() {
        let m = ResourceMetadata::new(
            "https://mcp.example.com/mcp",
            &servers(),
            &["tools:call".to_owned()],
        )
        .unwrap();
        assert_eq!(
            m.url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"
        );
        let doc: serde_json::Value = serde_json::from_slice(m.document()).unwrap();
        assert_eq!(
            doc,
            json!({
                "resource": "https://mcp.example.com/mcp",
                "authorization_servers": ["https://auth.example.com"],
                "bearer_methods_supported": ["header"],
                "scopes_supported": ["tools:call"],
            })
        );
        assert!(m.serves("/.well-known/oauth-protected-resource"));
        assert!(m.serves("/.well-known/oauth-protected-resource/mcp"));
        assert!(!m.serves("/.well-known/oauth-protected-resource/other"));
        assert!(!m.serves("/.well-known/oauth-protected-resourcex"));
    }

    #[test]
    fn scopes_are_optional_and_paths_follow_the_resource() {
        let m = ResourceMetadata::new("http://127.0.0.1:8080/tools/mcp", &servers(), &[]).unwrap();
        assert_eq!(
            m.url(),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource/tools/mcp"
        );
        let doc: serde_json::Value = serde_json::from_slice(m.document()).unwrap();
        assert!(doc.get("scopes_supported").is_none(), "{doc}");
        assert!(m.serves("/.well-known/oauth-protected-resource/tools/mcp"));
        assert!(m.serves("/.well-known/oauth-protected-resource/mcp"));
        let root = ResourceMetadata::new("https://mcp.example.com/", &servers(), &[]).unwrap();
        assert_eq!(
            root.url(),
            "https://mcp.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn bad_settings_are_refused() {
        for resource in [
            "mcp.example.com/mcp",
            "ftp://mcp.example.com/mcp",
            "https:///mcp",
            "https://mcp.example.com/mcp#frag",
            "https://mcp.example.com/m cp",
            "https://mcp.example.com/\"mcp",
            "https://user@mcp.example.com/mcp",
        ] {
            assert!(
                ResourceMetadata::new(resource, &servers(), &[]).is_err(),
                "{resource}"
            );
        }
        assert!(ResourceMetadata::new("https://mcp.example.com/mcp", &[], &[]).is_err());
        assert!(
            ResourceMetadata::new("https://mcp.example.com/mcp", &["auth".to_owned()], &[])
                .is_err()
        );
        for scope in ["", "a b", "a\"b", "a\\b"] {
            assert!(
                ResourceMetadata::new(
                    "https://mcp.example.com/mcp",
                    &servers(),
                    &[scope.to_owned()]
                )
                .is_err(),
                "{scope:?}"
            );
        }
    }
}
