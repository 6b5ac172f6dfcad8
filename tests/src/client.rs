//! What the tests need from a transport, so a flow is written once and run
//! over both HTTP and stdio.

use serde_json::Value;

use crate::mcp::{ToolCall, with_meta};

/// One request and everything the server sent for it.
#[derive(Clone, Debug)]
pub struct Exchange {
    /// The HTTP status (`None` on stdio).
    pub status: Option<u16>,
    /// The HTTP response media type (`None` on stdio).
    pub media_type: Option<String>,
    /// Notifications sent for the request before its response, in order.
    pub notifications: Vec<Value>,
    /// The final JSON-RPC response (its id already checked).
    pub response: Value,
}

/// A transport the tests can send MCP requests over.
pub trait McpClient: Sync {
    /// Sends `method` with `params` (already carrying `_meta`) under a fresh
    /// id and waits for its response.
    fn exchange(&self, method: &str, params: Value) -> Exchange;

    /// `"http"` or `"stdio"`, for messages.
    fn transport(&self) -> &'static str;

    /// Sends `method` with `params` plus a `_meta` declaring `caps`; returns
    /// the JSON-RPC response.
    fn rpc(&self, method: &str, params: Value, caps: Value) -> Value {
        self.exchange(method, with_meta(params, caps)).response
    }

    /// Sends one round of a tool call; returns the JSON-RPC response.
    fn call(&self, call: &ToolCall) -> Value {
        self.exchange("tools/call", call.params()).response
    }
}
