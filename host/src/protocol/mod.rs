//! The MCP 2026-07-28 wire: JSON-RPC framing, the per-request envelope,
//! WIT ⇄ JSON conversion and method dispatch (tools, prompts, resources,
//! completions, subscriptions, tasks). Transport-agnostic: the HTTP
//! and stdio transports decode messages and hand requests to [`Server`].

mod access;
pub mod answer;
pub mod apps;
mod catalog;
mod completion;
mod context;
mod dispatch;
pub mod envelope;
pub mod in_flight;
pub mod jsonrpc;
pub mod method;
mod mrtr;
pub mod outcome;
pub mod param_headers;
mod prompts;
mod resources;
pub mod skills;
pub mod subscriptions;
mod tasks;
mod tools;
pub(crate) mod wire;

pub use access::AccessSettings;
pub use answer::Answer;
pub use answer::Reply;
pub use context::{Notifier, ProtocolSettings, RequestContext};
pub use dispatch::{Listener, Server};
pub(crate) use resources::{check_uri_length, is_not_found};
