//! How a request ended, as the server classifies its own answer: served,
//! failed by the component that served it, or turned away by the server
//! before any component ran (and why). Each [`RpcError`](super::jsonrpc::RpcError)
//! and each complete result carries its outcome from where it is made, so
//! that observers (the metrics' `airlock_outcome` label) read it rather
//! than guess it from a code: `-32602` is an unknown tool, a refused
//! argument, a bad `requestState` or a hidden tool's refusal alike.
//!
//! Only [`Outcome::Failed`] is a failure of a tool (or prompt, or
//! resource): a caller refused by a rule or a quota, or asking for a tool
//! that does not exist, says nothing about the tool.

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Served: a complete result, a request for input, a task.
    Ok,
    /// The component serving it failed: a tool's `isError` result, an
    /// error of the component's own, a trap, a deadline or another limit,
    /// an outcome that is invalid or too large.
    Failed,
    /// Refused by an access rule (whether the caller may see the item or
    /// not).
    Denied,
    /// Refused by a quota: a rate limit, the caller's sessions or tasks.
    OverQuota,
    /// It names a method, tool, prompt, resource, skill or task that is not
    /// served.
    Unknown,
    /// The request is malformed, or its arguments, `requestState`, headers
    /// or declared capabilities do not do for what it asks (arguments that
    /// do not match a tool's input schema included).
    Invalid,
    /// The server could not serve it now (busy, still loading its
    /// components, a store down); retrying later may succeed.
    Unavailable,
    /// Airlock itself failed.
    Internal,
}

impl Outcome {
    /// Its label value.
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Failed => "failed",
            Outcome::Denied => "denied",
            Outcome::OverQuota => "over_quota",
            Outcome::Unknown => "unknown",
            Outcome::Invalid => "invalid",
            Outcome::Unavailable => "unavailable",
            Outcome::Internal => "internal",
        }
    }
}
