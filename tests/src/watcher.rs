//! The `watcher` test guest, driven: it reports the resource changes a
//! test asks for.

use serde_json::json;

use crate::client::McpClient;
use crate::mcp::{ToolCall, complete, text};

/// Has the watcher report the resource at `uri` as updated (its `touch`
/// tool); checks the call completed.
#[track_caller]
pub fn touch(client: &dyn McpClient, uri: &str) {
    let response = client.call(&ToolCall::new("touch", json!({ "uri": uri })));
    assert_eq!(text(complete(&response)), format!("touched {uri}"));
}
