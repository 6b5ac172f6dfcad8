//! What serving a request takes besides the request itself: who sent it
//! ([`RequestContext`]), where its notifications go ([`Notifier`]), the
//! protocol's settings, and the parts of the server a method uses
//! ([`Services`]). Methods depend on this, never on the server that routes
//! to them.

use tokio::sync::mpsc;

use super::envelope::MirroredHeaders;
use crate::access::Caller;
use crate::registry::input_schema::{HeavyChecks, ViolationLimits};
use crate::runtime::Runtime;
use crate::sealing::StateSealer;
use crate::tasks::Tasks;

/// Channel for the notifications of one request (encoded JSON-RPC messages),
/// delivered before its response.
pub type Notifier = mpsc::Sender<Vec<u8>>;

/// Who sent a request and, on HTTP, the headers that mirror its body.
#[derive(Debug, Clone, Copy)]
pub struct RequestContext<'a> {
    /// The authenticated principal that `requestState` is bound to (a
    /// 2025-era session's: the principal it was opened by).
    pub principal: &'a str,
    /// Who sent this request, as access rules see it.
    pub caller: &'a Caller,
    /// The mirrored HTTP headers; `None` on stdio.
    pub headers: Option<MirroredHeaders<'a>>,
}

/// Settings of the protocol layer.
#[derive(Debug, Clone)]
pub struct ProtocolSettings {
    /// Most rounds one multi-round call may take before it is refused.
    pub max_rounds: u32,
    /// `ttlMs` of `server/discover` and of every list.
    pub list_ttl_ms: u64,
    /// `ttlMs` of `resources/read` results.
    pub read_ttl_ms: u64,
    /// Most items on one page of a list.
    pub page_size: usize,
    /// Optional `instructions` in `server/discover` (and `initialize`).
    pub instructions: Option<String>,
    /// How much a call refused for its arguments says of the violations.
    pub violations: ViolationLimits,
    /// Where the checks of heavy arguments run.
    pub heavy_checks: HeavyChecks,
}

impl Default for ProtocolSettings {
    fn default() -> Self {
        Self {
            max_rounds: 32,
            list_ttl_ms: 60_000,
            read_ttl_ms: 0,
            page_size: 100,
            instructions: None,
            violations: ViolationLimits::default(),
            heavy_checks: HeavyChecks::default(),
        }
    }
}

/// The parts of the server the methods use.
#[derive(Clone, Copy)]
pub(super) struct Services<'a> {
    /// Runs components.
    pub(super) runtime: &'a Runtime,
    /// Seals and opens `requestState`.
    pub(super) sealer: &'a StateSealer,
    /// The protocol's settings.
    pub(super) settings: &'a ProtocolSettings,
    /// Tasks, when the server runs them.
    pub(super) tasks: Option<&'a Tasks>,
}
