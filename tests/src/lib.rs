//! End-to-end test helpers: start the real `airlock` binary on a temporary
//! tools directory of real components, and talk MCP 2026-07-28 to it over
//! HTTP or stdio.
//!
//! The binary and the components must be built first (release profile);
//! `scripts/test` does it.

pub mod client;
pub mod flows;
pub mod http;
pub mod mcp;
pub mod paths;
pub mod server;
pub mod stdio;

pub use client::{Exchange, McpClient};
pub use http::{Headers, Http, Reply, raw_http};
pub use mcp::{ToolCall, all_caps, code, no_caps};
pub use server::{Airlock, HttpServer, SAMPLE_TOOLS, SAMPLES, ToolsDir, run_airlock};
pub use stdio::StdioServer;
