//! What the tests need from a transport, so a flow is written once and run
//! over both HTTP and stdio.

use serde_json::{Value, json};

use crate::mcp::{ToolCall, complete, no_caps, with_meta};

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

    /// Every item of list `method` (e.g. `tools/list`) under `field`,
    /// following `nextCursor` to the last page.
    #[track_caller]
    fn list_all(&self, method: &str, field: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..1000 {
            let params = match &cursor {
                Some(cursor) => json!({ "cursor": cursor }),
                None => json!({}),
            };
            let response = self.rpc(method, params, no_caps());
            let result = complete(&response);
            items.extend(
                result[field]
                    .as_array()
                    .unwrap_or_else(|| panic!("{method} needs a `{field}` array: {response}"))
                    .iter()
                    .cloned(),
            );
            match result.get("nextCursor") {
                Some(next) if !next.is_null() => cursor = Some(next.clone()),
                _ => return items,
            }
        }
        panic!("{method} never reached its last page");
    }

    /// The name of every tool, sorted.
    #[track_caller]
    fn tool_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .list_all("tools/list", "tools")
            .iter()
            .map(|tool| {
                tool["name"]
                    .as_str()
                    .unwrap_or_else(|| panic!("a tool without a name: {tool}"))
                    .to_string()
            })
            .collect();
        names.sort_unstable();
        names
    }
}
