//! Host-side bindings of the `tool-provider` world (`wit/worlds.wit`).
//!
//! Both directions are `async`:
//!
//! - exports (`list-tools`, `call-tool`) are called with `call_async`, so that
//!   the epoch callback can yield to tokio at every tick and a looping guest
//!   never holds a worker thread for longer than one tick;
//! - imports (`log`, `progress`) are `async` so that they can await a bounded
//!   event channel (back-pressure from a slow client) without blocking a
//!   worker thread, and `trappable` so that a wait that outlives the call's
//!   deadline can end the call.
//!
//! The generated code lives in a private module; only the types the rest of
//! the host needs are re-exported.

mod generated {
    #![allow(missing_docs, clippy::all)]

    wasmtime::component::bindgen!({
        world: "tool-provider",
        path: "../wit",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

/// The WIT `types` interface: tools, call outcomes, rounds, content blocks.
pub use generated::airlock::mcp::types as wit;

impl wit::ClientCapabilities {
    /// A client that declared no optional capability.
    pub const NONE: Self = Self {
        elicitation_form: false,
        elicitation_url: false,
        sampling: false,
        sampling_tools: false,
        sampling_context: false,
        roots: false,
    };
}

impl wit::Round {
    /// The first round of a call: no answers, no state.
    pub fn first(client: wit::ClientCapabilities) -> Self {
        Self {
            number: 1,
            responses: Vec::new(),
            state: None,
            client,
        }
    }
}

/// Severity of a guest log message (`airlock:mcp/host.log-level`).
pub use generated::airlock::mcp::host::LogLevel;

/// The generated host traits of the imported interfaces (implemented by the
/// per-call store data).
pub(crate) use generated::airlock::mcp::{host as host_import, types as types_import};

/// An instantiated `tool-provider` component.
pub(crate) use generated::ToolProvider;

/// A component linked against the host, ready to instantiate cheaply.
pub(crate) use generated::ToolProviderPre;
