//! End-to-end test helpers: start the real `airlock` binary on a temporary
//! tools directory of real components, and talk MCP 2026-07-28 to it over
//! HTTP or stdio.
//!
//! The binary and the components must be built first (release profile);
//! `scripts/test` does it.

pub mod client;
pub mod daemon;
pub mod everything;
pub mod flows;
pub mod hostile;
pub mod http;
pub mod jwt;
pub mod language_tools;
pub mod legacy;
pub mod mcp;
pub mod nginx;
pub mod numbered;
pub mod oci_registry;
pub mod otlp;
pub mod paths;
pub mod prometheus;
pub mod redis;
pub mod sdk_clients;
pub mod server;
pub mod sigstore;
pub mod sse;
pub mod stamp;
pub mod stdio;
pub mod wait;
pub mod watcher;

pub use client::{Exchange, McpClient};
pub use http::{Headers, Http, Reply, raw_http};
pub use mcp::{ToolCall, all_caps, code, no_caps};
pub use nginx::Nginx;
pub use otlp::{OtlpReceiver, ReceivedSpan, SilentCollector};
pub use prometheus::Prometheus;
pub use redis::RedisServer;
pub use server::{
    Airlock, HttpServer, Run, SAMPLE_TOOLS, SAMPLES, ToolsDir, run_airlock, run_airlock_watched,
    run_airlock_with_env, run_airlock_with_input, run_airlock_within,
};
pub use sse::{Next, SseStream, listen};
pub use stdio::StdioServer;
pub use wait::wait_until;

/// Defines, for each `name: "component" => flow;`, a test `http::name` and a
/// test `stdio::name` that start a server on a tools directory holding that
/// component and run `flow` (a `fn(&dyn McpClient)`) against it. Paths are
/// resolved in the calling module.
#[macro_export]
macro_rules! over_both_transports {
    ($($name:ident: $component:literal => $flow:path;)*) => {
        mod http {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    let tools = $crate::ToolsDir::with(&[$component]);
                    let server = $crate::Airlock::new(&tools).start_http();
                    $flow(&server.client());
                }
            )*
        }
        mod stdio {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    let tools = $crate::ToolsDir::with(&[$component]);
                    let server = $crate::Airlock::new(&tools).start_stdio();
                    $flow(&server);
                }
            )*
        }
    };
}
