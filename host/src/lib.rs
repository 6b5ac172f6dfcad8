//! Airlock: a host server for MCP tools written as WebAssembly components.
//!
//! The path of a request: [`transport`] → [`protocol`] (envelope checks,
//! dispatch) → [`state`] (open `requestState`) → [`runtime`] (a fresh
//! instance of the tool's component, loaded by [`registry`]) → back out.
//! [`live`] keeps the registry current while the server runs.

pub mod auth;
pub mod inspect;
pub mod live;
pub mod logging;
pub mod policy;
pub mod protocol;
pub mod registry;
pub mod runtime;
pub mod serve;
pub mod state;
pub mod transport;
