//! The server card (SEP-2127, a draft): what a client or a catalog may learn
//! of this server before connecting, at `GET /mcp/server-card`.
//!
//! The card (`application/mcp-server-card+json`) says the server's name,
//! version and description, the endpoint clients reach (when a public URL is
//! configured) with every protocol version it serves, and, under
//! `_meta["airlock/capabilities"]`, the capabilities `server/discover`
//! declares for what is loaded now (so the skills, Apps and tasks
//! extensions appear exactly when discover declares them). It is public: no
//! token is asked (only the `Host` allow-list applies), `Access-Control-
//! Allow-Origin: *` lets a browser read it, and it never depends on the
//! caller. It is cached like `server/discover` (`max-age` is the lists'
//! `ttlMs`, 0 while the first load runs), with a strong `ETag` over its bytes: `If-None-Match` with the
//! current tag gets 304.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde_json::{Value, json};

use crate::legacy::LEGACY_VERSIONS;
use crate::protocol::Server;
use crate::protocol::envelope::SUPPORTED_VERSIONS;

/// The card's media type.
pub const MEDIA_TYPE: &str = "application/mcp-server-card+json";
/// The path of the card: the endpoint's URL followed by `/server-card`.
pub const PATH: &str = "/mcp/server-card";
/// The schema the card conforms to.
const SCHEMA: &str = "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json";
/// The card's key for what `server/discover` declares.
const CAPABILITIES_KEY: &str = "airlock/capabilities";

/// The card's name when none is configured.
pub const DEFAULT_NAME: &str = "local/airlock";
/// The card's description when none is configured.
pub const DEFAULT_DESCRIPTION: &str = "MCP tools run as sandboxed WebAssembly components";

/// What the card says of this server beside what is loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardSettings {
    /// Reverse-DNS name with one slash (`com.example/tools`).
    pub name: String,
    /// What the server offers, 1 to 100 characters.
    pub description: String,
    /// The URL clients reach the MCP endpoint at, if known.
    pub public_url: Option<String>,
}

impl Default for CardSettings {
    fn default() -> Self {
        Self {
            name: DEFAULT_NAME.to_owned(),
            description: DEFAULT_DESCRIPTION.to_owned(),
            public_url: None,
        }
    }
}

/// The card of one server.
pub struct ServerCard {
    settings: CardSettings,
    server: Arc<Server>,
}

impl std::fmt::Debug for ServerCard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerCard")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

#[derive(Serialize)]
struct Document<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    name: &'a str,
    version: &'static str,
    description: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    remotes: Vec<Value>,
    #[serde(rename = "_meta")]
    meta: Value,
}

impl ServerCard {
    /// The card of `server`, saying `settings`.
    pub fn new(settings: CardSettings, server: Arc<Server>) -> Self {
        Self { settings, server }
    }

    /// The card's bytes now.
    fn document(&self) -> Vec<u8> {
        let versions: Vec<&str> = SUPPORTED_VERSIONS
            .iter()
            .chain(LEGACY_VERSIONS)
            .copied()
            .collect();
        let remotes = self
            .settings
            .public_url
            .iter()
            .map(|url| {
                json!({
                    "type": "streamable-http",
                    "url": url,
                    "supportedProtocolVersions": versions,
                })
            })
            .collect();
        let document = Document {
            schema: SCHEMA,
            name: &self.settings.name,
            version: env!("CARGO_PKG_VERSION"),
            description: &self.settings.description,
            remotes,
            meta: json!({ CAPABILITIES_KEY: self.server.discovered_capabilities() }),
        };
        serde_json::to_vec(&document).unwrap_or_default()
    }

    /// The answer to `GET` (or `HEAD`) with `headers`: the card, or 304
    /// when `If-None-Match` names its current tag.
    pub fn respond(&self, headers: &HeaderMap) -> Response {
        let body = self.document();
        let digest = ring::digest::digest(&ring::digest::SHA256, &body);
        let etag = format!("\"{}\"", crate::hex::encode(&digest.as_ref()[..16]));
        let max_age = self.server.list_ttl_ms() / 1000;
        let mut response = if matches_tag(headers, &etag) {
            StatusCode::NOT_MODIFIED.into_response()
        } else {
            let mut response = Response::new(Body::from(body));
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(MEDIA_TYPE));
            response
        };
        let headers = response.headers_mut();
        if let Ok(etag) = HeaderValue::from_str(&etag) {
            headers.insert(header::ETAG, etag);
        }
        if let Ok(cache) = HeaderValue::from_str(&format!("public, max-age={max_age}")) {
            headers.insert(header::CACHE_CONTROL, cache);
        }
        cors(headers);
        response
    }

    /// The answer to a CORS preflight: 204 with the CORS headers.
    pub fn preflight() -> Response {
        let mut response = StatusCode::NO_CONTENT.into_response();
        cors(response.headers_mut());
        response
    }
}

/// The CORS headers of a public, read-only document.
fn cors(headers: &mut HeaderMap) {
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_ORIGIN,
        HeaderValue::from_static("*"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("Content-Type"),
    );
}

/// Whether `If-None-Match` names `etag` (or is `*`); weak tags compare by
/// their value, as RFC 9110 §13.1.2 says for `If-None-Match`.
fn matches_tag(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|tag| tag.trim())
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == etag)
}

/// Checks a card name: reverse-DNS, exactly one slash, 3 to 200 characters
/// (the card schema's pattern `^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`).
pub fn check_name(name: &str) -> Result<String, String> {
    let valid = (3..=200).contains(&name.len())
        && name.split_once('/').is_some_and(|(namespace, server)| {
            !namespace.is_empty()
                && !server.is_empty()
                && namespace
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
                && server
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        });
    if valid {
        Ok(name.to_owned())
    } else {
        Err("a server card name is reverse-DNS with one slash, e.g. com.example/tools (letters, digits, `.` and `-` before the slash; `_` too after it; 3 to 200 characters)".to_owned())
    }
}

/// Checks a card description: 1 to 100 characters.
pub fn check_description(description: &str) -> Result<String, String> {
    let length = description.chars().count();
    if (1..=100).contains(&length) {
        Ok(description.to_owned())
    } else {
        Err(format!(
            "a server card description has 1 to 100 characters (this one has {length})"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn if_none_match(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn if_none_match_names_the_tag_in_a_list_weakly_or_as_a_star() {
        let tag = "\"abc\"";
        assert!(matches_tag(&if_none_match("\"abc\""), tag));
        assert!(matches_tag(&if_none_match("\"x\", W/\"abc\""), tag));
        assert!(matches_tag(&if_none_match("*"), tag));
        assert!(!matches_tag(&if_none_match("\"abd\""), tag));
        assert!(!matches_tag(&HeaderMap::new(), tag));
    }

    #[test]
    fn names_follow_the_card_schema() {
        assert!(check_name("com.example/tools").is_ok());
        assert!(check_name("local/air_lock-1.0").is_ok());
        for bad in [
            "tools",
            "a/b/c",
            "/tools",
            "com.example/",
            "com_x/tools",
            "x/",
        ] {
            assert!(check_name(bad).is_err(), "{bad}");
        }
        assert!(check_description("").is_err());
        assert!(check_description(&"é".repeat(100)).is_ok());
        assert!(check_description(&"a".repeat(101)).is_err());
    }
}
