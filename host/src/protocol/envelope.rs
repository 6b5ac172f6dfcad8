//! The per-request envelope of MCP 2026-07-28: the `_meta` every request
//! carries (protocol version, client capabilities, progress token, log level)
//! and, on Streamable HTTP, the headers that mirror the body.
//!
//! The checks run in the order the conformance suite pins down: `_meta`
//! present, header version equal to `_meta` version, version supported,
//! `Mcp-Method` equal to the body, method known, `Mcp-Name` equal to the body.

use axum::http::{HeaderMap, HeaderName};
use base64::Engine as _;
use serde_json::{Map, Value, json};

use super::jsonrpc::{RpcError, codes};

/// The protocol revision Airlock speaks.
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Every protocol revision Airlock accepts on the stateless wire.
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// The `_meta` key of the protocol version.
pub(crate) const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The `_meta` key of the client capabilities.
pub(crate) const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key of the log level.
pub(crate) const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";

/// Severity of a log message, ordered from least to most severe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl LogLevel {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level of a wire name (`"debug"` … `"emergency"`).
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "debug" => LogLevel::Debug,
            "info" => LogLevel::Info,
            "notice" => LogLevel::Notice,
            "warning" => LogLevel::Warning,
            "error" => LogLevel::Error,
            "critical" => LogLevel::Critical,
            "alert" => LogLevel::Alert,
            "emergency" => LogLevel::Emergency,
            _ => return None,
        })
    }
}

/// What the client declared it can do on this request. Parsed leniently:
/// unknown members are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ClientCapabilities {
    /// `elicitation` (an empty object means form mode only).
    pub elicitation_form: bool,
    /// `elicitation.url`.
    pub elicitation_url: bool,
    /// `sampling`.
    pub sampling: bool,
    /// `sampling.tools`.
    pub sampling_tools: bool,
    /// `sampling.context`.
    pub sampling_context: bool,
    /// `roots`.
    pub roots: bool,
    /// The tasks extension (`extensions["io.modelcontextprotocol/tasks"]`).
    pub tasks: bool,
}

impl ClientCapabilities {
    fn parse(value: &Map<String, Value>) -> Self {
        let elicitation = value.get("elicitation").and_then(Value::as_object);
        let sampling = value.get("sampling").and_then(Value::as_object);
        ClientCapabilities {
            // `elicitation: {}` means form only; `{url: {}}` alone means url only.
            elicitation_form: elicitation
                .is_some_and(|e| e.contains_key("form") || !e.contains_key("url")),
            elicitation_url: elicitation.is_some_and(|e| e.contains_key("url")),
            sampling: sampling.is_some(),
            sampling_tools: sampling.is_some_and(|s| s.contains_key("tools")),
            sampling_context: sampling.is_some_and(|s| s.contains_key("context")),
            roots: value.get("roots").is_some_and(Value::is_object),
            tasks: value
                .get("extensions")
                .and_then(Value::as_object)
                .is_some_and(|e| e.get(TASKS_EXTENSION).is_some_and(Value::is_object)),
        }
    }
}

/// The name of MCP's tasks extension, in capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// The validated `_meta` of one request.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    /// `io.modelcontextprotocol/clientCapabilities`.
    pub capabilities: ClientCapabilities,
    /// `progressToken`, when the client wants progress notifications.
    pub progress_token: Option<Value>,
    /// `io.modelcontextprotocol/logLevel`, when the client wants log notifications.
    pub log_level: Option<LogLevel>,
}

impl RequestMeta {
    /// True when the request may produce notifications before its response.
    pub fn wants_notifications(&self) -> bool {
        self.progress_token.is_some() || self.log_level.is_some()
    }
}

/// The HTTP headers that mirror the body, already trimmed; `None` on stdio.
#[derive(Debug, Default, Clone, Copy)]
pub struct MirroredHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name` (may be Base64-sentinel encoded).
    pub name: Option<&'a str>,
    /// Every header, for the `Mcp-Param-*` ones.
    pub all: Option<&'a HeaderMap>,
}

/// `MCP-Protocol-Version`, named once rather than parsed at every lookup.
static PROTOCOL_VERSION_HEADER: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method`.
static METHOD_HEADER: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name`.
static NAME_HEADER: HeaderName = HeaderName::from_static("mcp-name");

impl<'a> MirroredHeaders<'a> {
    /// The mirroring headers of an HTTP request with these `headers`.
    pub fn read(headers: &'a HeaderMap) -> Self {
        // A value with bytes outside visible ASCII can never match a body
        // value (those travel Base64-encoded), so it is read as a value
        // that mismatches.
        let value = |name: &HeaderName| {
            headers
                .get(name)
                .map(|v| v.to_str().map(str::trim).unwrap_or("\u{fffd}"))
        };
        MirroredHeaders {
            protocol_version: value(&PROTOCOL_VERSION_HEADER),
            method: value(&METHOD_HEADER),
            name: value(&NAME_HEADER),
            all: Some(headers),
        }
    }
}

/// Reads and checks the request `_meta` and, on HTTP, the mirrored headers
/// up to (not including) the method lookup: the order the spec pins down.
pub fn check_envelope(
    method: &str,
    params: &Map<String, Value>,
    headers: Option<&MirroredHeaders<'_>>,
) -> Result<RequestMeta, RpcError> {
    if let Some(headers) = headers
        && headers.protocol_version.is_none()
    {
        return Err(RpcError::header_mismatch(
            "Missing MCP-Protocol-Version header",
        ));
    }
    let meta = params.get("_meta").and_then(Value::as_object);
    let version = meta
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let capabilities = meta
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .and_then(Value::as_object);
    let (Some(meta), Some(version), Some(capabilities)) = (meta, version, capabilities) else {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: every request needs params._meta with \"{META_PROTOCOL_VERSION}\" (a string) \
             and \"{META_CLIENT_CAPABILITIES}\" (an object)"
        ))
        .with_status(400));
    };
    if let Some(header) = headers.and_then(|h| h.protocol_version)
        && header != version
    {
        return Err(RpcError::header_mismatch(format!(
            "Header mismatch: MCP-Protocol-Version header '{header}' does not match _meta protocolVersion '{version}'"
        )));
    }
    if !SUPPORTED_VERSIONS.contains(&version) {
        return Err(unsupported_version(version));
    }
    if let Some(headers) = headers {
        match headers.method {
            None => return Err(RpcError::header_mismatch("Missing Mcp-Method header")),
            Some(header) if header != method => {
                return Err(RpcError::header_mismatch(format!(
                    "Header mismatch: Mcp-Method header '{header}' does not match body method '{method}'"
                )));
            }
            Some(_) => {}
        }
    }
    let log_level = match meta.get(META_LOG_LEVEL) {
        None => None,
        Some(level) => Some(
            level
                .as_str()
                .and_then(LogLevel::from_name)
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("Invalid params: unknown log level {level}"))
                })?,
        ),
    };
    let progress_token = match meta.get("progressToken") {
        None => None,
        Some(token @ (Value::String(_) | Value::Number(_))) => Some(token.clone()),
        Some(_) => {
            return Err(RpcError::invalid_params(
                "Invalid params: progressToken must be a string or a number",
            ));
        }
    };
    Ok(RequestMeta {
        capabilities: ClientCapabilities::parse(capabilities),
        progress_token,
        log_level,
    })
}

/// True when a request's `_meta` asks for notifications (a progress token or
/// a log level), read before the envelope is checked so that a transport can
/// prepare a stream for them.
pub fn opts_in_to_notifications(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("progressToken") || m.contains_key(META_LOG_LEVEL))
}

/// The -32022 error for a version Airlock does not speak.
pub fn unsupported_version(requested: &str) -> RpcError {
    RpcError::new(
        codes::UNSUPPORTED_PROTOCOL_VERSION,
        format!(
            "Unsupported protocol version '{requested}'; this server speaks {}",
            SUPPORTED_VERSIONS.join(", ")
        ),
    )
    .with_data(json!({ "supported": SUPPORTED_VERSIONS, "requested": requested }))
    .with_status(400)
}

/// Checks the `Mcp-Name` header against the body value (`params.name` or
/// `params.uri`). Does nothing on stdio.
pub fn check_name_header(
    headers: Option<&MirroredHeaders<'_>>,
    body_value: &str,
) -> Result<(), RpcError> {
    let Some(headers) = headers else {
        return Ok(());
    };
    let Some(raw) = headers.name else {
        return Err(RpcError::header_mismatch("Missing Mcp-Name header"));
    };
    let header = decode_header_value(raw)?;
    if header != body_value {
        return Err(RpcError::header_mismatch(format!(
            "Header mismatch: Mcp-Name header '{raw}' does not match body value '{body_value}'"
        )));
    }
    Ok(())
}

/// Decodes a mirrored header value: `=?base64?…?=` is strict standard Base64
/// of UTF-8 bytes; anything else (including a wrong-case prefix) is literal.
pub fn decode_header_value(raw: &str) -> Result<std::borrow::Cow<'_, str>, RpcError> {
    let Some(encoded) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(std::borrow::Cow::Borrowed(raw));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| {
            RpcError::header_mismatch("Header value is not valid Base64 inside =?base64?…?=")
        })?;
    String::from_utf8(bytes)
        .map(std::borrow::Cow::Owned)
        .map_err(|_| RpcError::header_mismatch("Header value does not decode to UTF-8"))
}

/// The `requiredCapabilities` object of a -32021 error.
pub fn missing_capability(message: String, required: Value) -> RpcError {
    RpcError::new(codes::MISSING_REQUIRED_CLIENT_CAPABILITY, message)
        .with_data(json!({ "requiredCapabilities": required }))
        .with_status(400)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(meta: Value) -> Map<String, Value> {
        json!({ "_meta": meta }).as_object().unwrap().clone()
    }

    fn good_meta() -> Value {
        json!({ META_PROTOCOL_VERSION: PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {} })
    }

    fn headers<'a>(version: &'a str, method: &'a str) -> MirroredHeaders<'a> {
        MirroredHeaders {
            protocol_version: Some(version),
            method: Some(method),
            ..Default::default()
        }
    }

    #[test]
    fn missing_meta_fields_are_invalid_params_with_400() {
        for p in [
            Map::new(),
            params(json!({ META_CLIENT_CAPABILITIES: {} })),
            params(json!({ META_PROTOCOL_VERSION: PROTOCOL_VERSION })),
        ] {
            let e = check_envelope(
                "server/discover",
                &p,
                Some(&headers(PROTOCOL_VERSION, "server/discover")),
            )
            .unwrap_err();
            assert_eq!((e.code, e.http_status), (codes::INVALID_PARAMS, 400));
        }
    }

    #[test]
    fn header_mismatch_comes_before_unsupported_version() {
        let p = params(json!({ META_PROTOCOL_VERSION: "v999.0.0", META_CLIENT_CAPABILITIES: {} }));
        let e = check_envelope("m", &p, Some(&headers(PROTOCOL_VERSION, "m"))).unwrap_err();
        assert_eq!((e.code, e.http_status), (codes::HEADER_MISMATCH, 400));
        let e = check_envelope("m", &p, Some(&headers("v999.0.0", "m"))).unwrap_err();
        assert_eq!(
            (e.code, e.http_status),
            (codes::UNSUPPORTED_PROTOCOL_VERSION, 400)
        );
        assert_eq!(
            e.data.unwrap(),
            json!({ "supported": [PROTOCOL_VERSION], "requested": "v999.0.0" })
        );
    }

    #[test]
    fn method_header_must_match_exactly() {
        let p = params(good_meta());
        assert!(
            check_envelope(
                "tools/list",
                &p,
                Some(&headers(PROTOCOL_VERSION, "tools/list"))
            )
            .is_ok()
        );
        let e = check_envelope(
            "tools/list",
            &p,
            Some(&headers(PROTOCOL_VERSION, "TOOLS/LIST")),
        )
        .unwrap_err();
        assert_eq!(e.code, codes::HEADER_MISMATCH);
        let missing = MirroredHeaders {
            protocol_version: Some(PROTOCOL_VERSION),
            ..Default::default()
        };
        assert_eq!(
            check_envelope("tools/list", &p, Some(&missing))
                .unwrap_err()
                .code,
            codes::HEADER_MISMATCH
        );
        assert!(
            check_envelope("tools/list", &p, None).is_ok(),
            "stdio has no headers"
        );
    }

    #[test]
    fn capabilities_and_opt_ins_are_read() {
        let p = params(json!({
            META_PROTOCOL_VERSION: PROTOCOL_VERSION,
            META_CLIENT_CAPABILITIES: {"elicitation": {}, "sampling": {"tools": {}}, "roots": {"listChanged": true},
                                       "extensions": {TASKS_EXTENSION: {}}},
            "progressToken": "p1",
            META_LOG_LEVEL: "warning",
        }));
        let meta = check_envelope("m", &p, None).unwrap();
        assert_eq!(
            meta.capabilities,
            ClientCapabilities {
                elicitation_form: true,
                elicitation_url: false,
                sampling: true,
                sampling_tools: true,
                sampling_context: false,
                roots: true,
                tasks: true,
            }
        );
        assert_eq!(
            (meta.progress_token, meta.log_level),
            (Some(json!("p1")), Some(LogLevel::Warning))
        );
        let bad = params(
            json!({ META_PROTOCOL_VERSION: PROTOCOL_VERSION, META_CLIENT_CAPABILITIES: {}, META_LOG_LEVEL: "loud" }),
        );
        assert_eq!(
            check_envelope("m", &bad, None).unwrap_err().code,
            codes::INVALID_PARAMS
        );
    }

    #[test]
    fn name_header_decodes_the_base64_sentinel_strictly() {
        let with = |name| MirroredHeaders {
            name: Some(name),
            ..Default::default()
        };
        assert!(check_name_header(Some(&with("=?base64?SGVsbG8=?=")), "Hello").is_ok());
        assert_eq!(
            check_name_header(Some(&with("=?base64?SGVsbG8?=")), "Hello")
                .unwrap_err()
                .code,
            codes::HEADER_MISMATCH
        );
        assert_eq!(
            check_name_header(Some(&with("=?base64?SGVs!!!bG8=?=")), "Hello")
                .unwrap_err()
                .code,
            codes::HEADER_MISMATCH
        );
        assert!(
            check_name_header(Some(&with("=?BASE64?SGVsbG8=?=")), "=?BASE64?SGVsbG8=?=").is_ok()
        );
        assert_eq!(
            check_name_header(Some(&with("other")), "Hello")
                .unwrap_err()
                .code,
            codes::HEADER_MISMATCH
        );
        assert_eq!(
            check_name_header(Some(&MirroredHeaders::default()), "Hello")
                .unwrap_err()
                .code,
            codes::HEADER_MISMATCH
        );
        assert!(check_name_header(None, "Hello").is_ok());
    }
}
