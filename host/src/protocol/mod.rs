//! The MCP 2026-07-28 wire: JSON-RPC framing, the per-request envelope,
//! WIT ⇄ JSON conversion and method dispatch. Transport-agnostic: the HTTP
//! and stdio transports decode messages and hand requests to [`Server`].

mod call;
mod dispatch;
pub mod envelope;
pub mod jsonrpc;
pub mod param_headers;
pub(crate) mod wire;

pub use dispatch::{Notifier, ProtocolSettings, Reply, RequestContext, Server};
