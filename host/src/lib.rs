//! Airlock: a host server for MCP tools written as WebAssembly components.
//!
//! The path of a request: [`transport`] → [`endpoint`] (which era:
//! [`legacy`] or the 2026-07-28 wire) → [`protocol`] (envelope checks,
//! dispatch) → [`sealing`] (open `requestState`) → [`runtime`] (a fresh
//! instance of the tool's component, loaded by [`registry`]) → back out.
//! [`live`] keeps the registry current while the server runs. [`cli`] is
//! the command line; it turns options into the plain settings of
//! [`serve`], [`inspect`] and [`sandbox`].

pub mod access;
pub mod audit;
pub mod auth;
pub mod cli;
pub mod endpoint;
mod guest_json;
#[cfg(test)]
mod held_once;
mod hex;
pub mod inspect;
pub mod legacy;
pub mod live;
pub mod logging;
pub mod metrics;
pub mod policy;
pub mod protocol;
pub mod quotas;
mod redis_url;
pub mod registry;
pub mod runtime;
pub mod sandbox;
pub mod scaffold;
pub mod sealing;
pub mod serve;
pub mod supply;
pub mod tasks;
pub mod telemetry;
mod tls;
mod toml_error;
pub mod transport;
pub mod units;
pub mod untrusted_file;
