//! Host-side bindings of the `server` world (`guest-sdk/wit/worlds.wit`: the
//! guest SDK crate carries the WIT package, so that it is published with it).
//!
//! A component may export any non-empty subset of the world's interfaces
//! (`tools`, `prompts`, `resources`, `completions`), so the host never uses
//! the world-level bindings to instantiate: it looks each interface up on
//! its own with the generated per-interface `GuestIndices`.
//!
//! Both directions are `async`:
//!
//! - exports (`list-tools`, `call-tool`, ...) are called with `call_async`, so that
//!   the epoch callback can yield to tokio and a looping guest never holds a
//!   worker thread for two ticks;
//! - imports (`log`, `progress`, ...) are `async` so that they can await a bounded
//!   event channel (back-pressure from a slow client) without blocking a
//!   worker thread, and `trappable` so that a wait that outlives the call's
//!   deadline can end the call.
//!
//! The generated code lives in a private module; only the types the rest of
//! the host needs are re-exported.

mod generated {
    #![allow(missing_docs, clippy::all)]

    wasmtime::component::bindgen!({
        world: "server",
        path: "../guest-sdk/wit",
        imports: { default: async | trappable },
        exports: { default: async },
    });
}

/// The WIT `types` interface: tools, call outcomes, rounds, content blocks.
pub use generated::airlock::mcp::types as wit;

/// The WIT `prompts` interface: prompts, prompt results and outcomes.
pub use generated::exports::airlock::mcp::prompts as wit_prompts;

/// The WIT `resources` interface: resources, templates and read outcomes.
pub use generated::exports::airlock::mcp::resources as wit_resources;

/// The WIT `completions` interface: completion requests and results.
pub use generated::exports::airlock::mcp::completions as wit_completions;

/// The exported interfaces' generated lookups, one per interface.
pub(crate) use generated::exports::airlock::mcp::{
    completions as completions_export, prompts as prompts_export, resources as resources_export,
    tools as tools_export,
};

impl wit::ClientCapabilities {
    /// A client that declared no optional capability.
    pub const NONE: Self = Self {
        elicitation_form: false,
        elicitation_url: false,
        sampling: false,
        sampling_tools: false,
        sampling_context: false,
        roots: false,
        tasks: false,
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
            task: false,
        }
    }
}

/// Severity of a guest log message (`airlock:mcp/host.log-level`).
pub use generated::airlock::mcp::host::LogLevel;

/// Which list a guest reports as changed (`airlock:mcp/host.list-kind`).
pub use generated::airlock::mcp::host::ListKind;

/// The generated host traits of the imported interfaces (implemented by the
/// per-call store data).
pub(crate) use generated::airlock::mcp::{host as host_import, types as types_import};

/// The world's bindings, for linking the host imports.
pub(crate) use generated::Server;
