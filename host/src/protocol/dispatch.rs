//! Method routing for the 2026-07-28 stateless wire: `server/discover`,
//! `tools/list` and `tools/call`, after the envelope checks. Transports hand
//! every decoded request to [`Server::handle`] and write back what it returns.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::envelope::{self, MirroredHeaders, PROTOCOL_VERSION, SUPPORTED_VERSIONS};
use super::jsonrpc::{self, Request, RpcError};
use super::param_headers::{self, ParamHeader};
use super::wire;
use crate::registry::Registry;
use crate::runtime::Runtime;
use crate::state::StateSealer;

/// Channel for the notifications of one request (encoded JSON-RPC messages),
/// delivered before its response.
pub type Notifier = mpsc::Sender<Vec<u8>>;

/// Settings of the protocol layer.
#[derive(Debug, Clone)]
pub struct ProtocolSettings {
    /// Most rounds one multi-round call may take before it is refused.
    pub max_rounds: u32,
    /// `ttlMs` of cacheable results (`server/discover`, `tools/list`).
    pub list_ttl_ms: u64,
    /// Most tools on one `tools/list` page.
    pub page_size: usize,
    /// Optional `instructions` in `server/discover`.
    pub instructions: Option<String>,
}

impl Default for ProtocolSettings {
    fn default() -> Self {
        Self {
            max_rounds: 32,
            list_ttl_ms: 60_000,
            page_size: 100,
            instructions: None,
        }
    }
}

/// Who sent a request and, on HTTP, the headers that mirror its body.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    /// The authenticated principal that `requestState` is bound to.
    pub principal: &'a str,
    /// The mirrored HTTP headers; `None` on stdio.
    pub headers: Option<MirroredHeaders<'a>>,
}

/// The encoded response to one request.
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC response message.
    pub body: Vec<u8>,
    /// The HTTP status Streamable HTTP pairs with it.
    pub http_status: u16,
}

/// The MCP server: everything needed to answer a request.
pub struct Server {
    pub(super) runtime: Arc<Runtime>,
    pub(super) registry: Arc<Registry>,
    pub(super) sealer: StateSealer,
    pub(super) settings: ProtocolSettings,
    tool_pages: Vec<Vec<Box<RawValue>>>,
    pub(super) param_headers: HashMap<String, Vec<ParamHeader>>,
    server_info: Box<RawValue>,
}

/// `_meta` of every result: who answered.
#[derive(Serialize)]
pub(super) struct ResultMeta<'a> {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: &'a RawValue,
}

/// A result with Airlock's `_meta` added.
#[derive(Serialize)]
pub(super) struct WithMeta<'a, R> {
    #[serde(flatten)]
    pub(super) result: R,
    #[serde(rename = "_meta")]
    pub(super) meta: ResultMeta<'a>,
}

impl Server {
    /// Builds the server over a loaded registry. Fails if a tool description
    /// cannot be served (the registry validates them, so this is a bug guard).
    pub fn new(
        runtime: Arc<Runtime>,
        registry: Arc<Registry>,
        sealer: StateSealer,
        settings: ProtocolSettings,
    ) -> anyhow::Result<Self> {
        let mut tools = Vec::with_capacity(registry.tools().len());
        let mut param_headers = HashMap::new();
        for entry in registry.tools() {
            let json = serde_json::to_string(&wire::tool(&entry.tool)?)?;
            let schema: Value = serde_json::from_str(&entry.tool.input_schema)?;
            match param_headers::annotations(&schema) {
                Ok(found) if found.is_empty() => {}
                Ok(found) => {
                    param_headers.insert(entry.tool.name.clone(), found);
                }
                Err(problem) => tracing::warn!(
                    tool = %entry.tool.name, file = %entry.source().display(), %problem,
                    "ignoring invalid x-mcp-header annotations (HTTP clients will drop this tool)"
                ),
            }
            tools.push(RawValue::from_string(json)?);
        }
        let page_size = settings.page_size.max(1);
        let mut tool_pages = Vec::new();
        let mut tools = tools.into_iter().peekable();
        while tools.peek().is_some() {
            tool_pages.push(tools.by_ref().take(page_size).collect());
        }
        let server_info = RawValue::from_string(
            json!({ "name": "airlock", "version": env!("CARGO_PKG_VERSION") }).to_string(),
        )?;
        Ok(Self {
            runtime,
            registry,
            sealer,
            settings,
            tool_pages,
            param_headers,
            server_info,
        })
    }

    pub(super) fn meta(&self) -> ResultMeta<'_> {
        ResultMeta {
            server_info: &self.server_info,
        }
    }

    /// Encodes a result with `_meta`.
    pub(super) fn reply(&self, id: &Value, result: impl Serialize) -> Reply {
        Reply {
            body: jsonrpc::encode_result(
                id,
                &WithMeta {
                    result,
                    meta: self.meta(),
                },
            ),
            http_status: 200,
        }
    }

    /// Answers one request. Notifications produced while it runs (progress,
    /// log messages) go to `notifier`, in order, before the reply.
    pub async fn handle(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Reply {
        match self.route(request, context, notifier).await {
            Ok(reply) => reply,
            Err(error) => {
                tracing::debug!(method = %request.method, code = error.code, message = %error.message, "request failed");
                Reply {
                    body: jsonrpc::encode_error(Some(&request.id), &error),
                    http_status: error.http_status,
                }
            }
        }
    }

    async fn route(
        &self,
        request: &Request,
        context: RequestContext<'_>,
        notifier: Option<&Notifier>,
    ) -> Result<Reply, RpcError> {
        if request.method == "initialize" && !request.params.contains_key("_meta") {
            return Err(legacy_initialize());
        }
        let meta =
            envelope::check_envelope(&request.method, &request.params, context.headers.as_ref())?;
        match request.method.as_str() {
            "server/discover" => Ok(self.reply(&request.id, self.discover())),
            "tools/list" => self.list_tools(request),
            "tools/call" => self.call_tool(request, &meta, context, notifier).await,
            method => Err(unknown_method(method)),
        }
    }

    fn discover(&self) -> impl Serialize + '_ {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Discover<'a> {
            result_type: &'static str,
            supported_versions: &'static [&'static str],
            capabilities: Value,
            #[serde(skip_serializing_if = "Option::is_none")]
            instructions: Option<&'a str>,
            ttl_ms: u64,
            cache_scope: &'static str,
        }
        Discover {
            result_type: "complete",
            supported_versions: SUPPORTED_VERSIONS,
            capabilities: json!({ "tools": {}, "logging": {} }),
            instructions: self.settings.instructions.as_deref(),
            ttl_ms: self.settings.list_ttl_ms,
            cache_scope: "public",
        }
    }

    fn list_tools(&self, request: &Request) -> Result<Reply, RpcError> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct ListTools<'a> {
            result_type: &'static str,
            tools: &'a [Box<RawValue>],
            #[serde(skip_serializing_if = "Option::is_none")]
            next_cursor: Option<String>,
            ttl_ms: u64,
            cache_scope: &'static str,
        }
        let page = match request.params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => decode_cursor(cursor)
                .filter(|page| *page < self.tool_pages.len())
                .ok_or_else(|| {
                    RpcError::invalid_params(format!("Invalid params: unknown cursor '{cursor}'"))
                })?,
            Some(_) => {
                return Err(RpcError::invalid_params(
                    "Invalid params: cursor must be a string",
                ));
            }
        };
        let tools = self
            .tool_pages
            .get(page)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let next_cursor = (page + 1 < self.tool_pages.len()).then(|| encode_cursor(page + 1));
        Ok(self.reply(
            &request.id,
            ListTools {
                result_type: "complete",
                tools,
                next_cursor,
                ttl_ms: self.settings.list_ttl_ms,
                cache_scope: "public",
            },
        ))
    }
}

/// Cursors are opaque to clients: `page-<n>` in Base64url.
fn encode_cursor(page: usize) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(format!("page-{page}"))
}

fn decode_cursor(cursor: &str) -> Option<usize> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(cursor)
        .ok()?;
    std::str::from_utf8(&bytes)
        .ok()?
        .strip_prefix("page-")?
        .parse()
        .ok()
}

/// Methods that older revisions had and 2026-07-28 removed.
const REMOVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "logging/setLevel",
    "resources/subscribe",
    "resources/unsubscribe",
    "tasks/result",
    "tasks/list",
];

fn unknown_method(method: &str) -> RpcError {
    if REMOVED_METHODS.contains(&method) {
        RpcError::new(
            jsonrpc::codes::METHOD_NOT_FOUND,
            format!("Method not found: {method} does not exist in MCP {PROTOCOL_VERSION}"),
        )
        .with_status(404)
    } else {
        RpcError::method_not_found(method)
    }
}

/// A legacy client's `initialize`: say which versions this server speaks,
/// the only thing such a client can show its user.
fn legacy_initialize() -> RpcError {
    RpcError::new(
        jsonrpc::codes::METHOD_NOT_FOUND,
        format!(
            "initialize is not supported: this server speaks MCP {} (stateless, no handshake)",
            SUPPORTED_VERSIONS.join(", ")
        ),
    )
    .with_status(404)
    .with_data(json!({ "supported": SUPPORTED_VERSIONS }))
}

/// Reads a required string parameter.
pub(super) fn required_str<'a>(
    params: &'a Map<String, Value>,
    name: &str,
) -> Result<&'a str, RpcError> {
    match params.get(name) {
        Some(Value::String(value)) => Ok(value),
        Some(_) => Err(RpcError::invalid_params(format!(
            "Invalid params: {name} must be a string"
        ))),
        None => Err(RpcError::invalid_params(format!(
            "Invalid params: missing {name}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        assert_eq!(decode_cursor(&encode_cursor(3)), Some(3));
        assert_eq!(decode_cursor("not a cursor"), None);
        assert_eq!(decode_cursor(""), None);
    }

    #[test]
    fn removed_methods_say_so() {
        let e = unknown_method("ping");
        assert_eq!(
            (e.code, e.http_status),
            (jsonrpc::codes::METHOD_NOT_FOUND, 404)
        );
        assert!(e.message.contains("does not exist in MCP 2026-07-28"));
        assert_eq!(unknown_method("x/y").message, "Method not found: x/y");
        assert_eq!(
            legacy_initialize().data.unwrap()["supported"][0],
            PROTOCOL_VERSION
        );
    }
}
