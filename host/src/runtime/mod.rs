//! The sandbox: the wasmtime engine, the linker, and one fresh instance per
//! call.
//!
//! - [`engine`]: the `Engine` (pooling allocator, copy-on-write memory
//!   images, epoch interruption);
//! - `ticker`: the thread that advances the epoch while a store lives;
//! - [`bindings`]: `bindgen!` of the `server` world;
//! - `checked`: a linked component whose exports were type-checked at load,
//!   and what it lists;
//! - `call`: one call: a permit, a fresh store and instance, the export,
//!   the outcome classified and counted;
//! - `store`: the `Store` of one call (WASI granting only the policy, limits,
//!   the deadline callback); `deadline`: waits bounded by the deadline;
//! - [`events`]: the host imports (`log`, `progress`, change reports);
//! - [`http`]: outbound `wasi:http`, refused unless the manifest allows it;
//!   `denied`: `wasi:http` imports of components without an `[http]` grant;
//! - [`output`]: the item counts of a guest's answer;
//! - [`stderr`]: a guest's stderr, kept as a bounded tail for the log;
//! - [`error`]: why a call failed, in user-facing words.
//!
//! # Why async
//!
//! Guests run with `call_async` on the tokio runtime. At the first epoch
//! tick after it has run a whole tick, a running guest yields to tokio, so a
//! guest that loops never holds a worker thread for two ticks, and once its
//! deadline has passed the next tick ends it. A semaphore caps how many guests run at once (so spinning
//! guests cannot crowd out request handling) and, with it, how many instances
//! the pooling allocator must hold. `component-model-async` stays off: it
//! doubles the cost of every async call.
//!
//! # Why a fresh instance per call
//!
//! A tool keeps no memory between calls: everything a multi-round call needs
//! travels in its sealed state. This makes every host interchangeable and
//! means a crashed or corrupted instance can never affect another call. With
//! the pooling allocator a fresh instance costs microseconds.

pub mod bindings;
mod call;
mod checked;
pub(crate) mod contract;
mod deadline;
mod denied;
pub mod engine;
pub mod error;
pub mod events;
pub mod http;
pub mod output;
pub mod stderr;
mod store;
mod ticker;

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::{HasSelf, InstancePre, Linker};

pub use self::bindings::{ListKind, LogLevel, wit, wit_completions, wit_prompts, wit_resources};
pub(crate) use self::call::ListError;
pub(crate) use self::checked::{CheckedComponent, Listing};
pub use self::error::CallError;
pub use self::events::{Change, EventSink, GuestEvent};
pub(crate) use self::store::CallState;
use self::ticker::{EPOCH_TICK, EpochTicker};
use crate::policy::{CallLimits, Policy, PolicyContext, PolicySources};

/// Limits applied to every guest call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeLimits {
    /// Most linear memory one instance may use, in bytes. Default 64 MiB:
    /// plenty for JSON-in, JSON-out tools (a Rust guest starts at about
    /// 1 MiB) and small enough that 256 concurrent calls fit in 16 GiB.
    /// The pooling allocator reserves exactly this (plus a guard region)
    /// per memory slot.
    pub max_memory_bytes: usize,
    /// Wall-clock time limit of one call, from the moment it is made
    /// (waiting for a free slot included). Default 10 s.
    pub call_timeout: Duration,
    /// Largest reply a call may produce, encoded, in bytes (see
    /// [`output`]); also the most bytes of log and progress messages one
    /// call may report, and the largest page of a list. A manifest may
    /// lower it for its component. Default 1 MiB.
    pub max_output_bytes: usize,
    /// Most guest calls running at once; further calls wait for a slot (up to
    /// their deadline). Default 256: guests are CPU-bound, so more than a few
    /// per core only queue work, but a burst of slow calls (a guest waiting
    /// on a full event channel, a WASI sleep) should not hold up quick ones.
    /// The instance pool is sized from this: each slot costs address space
    /// (the memory cap plus a guard region, per memory) and, once used, up
    /// to 2 MiB of resident memory kept warm for the next call.
    pub max_concurrent_calls: usize,
    /// Most `log` and `progress` events one call may report; later ones are
    /// dropped. Default 1000.
    pub max_events_per_call: usize,
    /// Most calls waiting for a free slot when all
    /// `max_concurrent_calls` are taken; a call beyond that fails at once
    /// with [`CallError::Busy`] instead of joining an ever longer queue.
    /// Default 1024.
    pub max_queued_calls: usize,
    /// Whether the engine meters fuel, so that manifests may set a fuel
    /// limit. Off by default: metering costs every call some speed.
    pub fuel: bool,
    /// Most host resources one instance may hold at once: open files and
    /// directory streams, streams, pollables, HTTP header fields, requests,
    /// responses and bodies. Creating one more fails the call. Default 256:
    /// a tool needs a handful (an HTTP request takes about ten). Each is
    /// bounded in bytes by wasmtime (streams buffer at most 64 KiB; header
    /// fields see [`max_http_fields_bytes`](Self::max_http_fields_bytes)),
    /// so the host memory one instance holds outside its own linear memory
    /// is bounded too.
    pub max_host_resources: usize,
    /// Largest set of HTTP header fields (names and values) one `fields`
    /// resource may hold, in bytes. Default 64 KiB.
    pub max_http_fields_bytes: usize,
    /// Most content blocks one outcome may hold (in a result, in prompt
    /// messages, in the sampling messages of input requests), and most
    /// contents one resource read may return. Default 1000.
    pub max_content_blocks: usize,
    /// Most input requests one `input_required` outcome may make.
    /// Default 64.
    pub max_input_requests: usize,
    /// Wall-clock time limit of one round of a task (which runs in the
    /// background, so nobody waits on it). Default 5 minutes.
    pub task_round_timeout: Duration,
    /// Largest component file loaded, in bytes; a larger one is refused by
    /// its size, unread. Default 128 MiB (an interpreter's component, with
    /// its heap snapshot, is tens of MiB).
    pub max_component_bytes: u64,
    /// Largest input or output schema of one tool, in bytes. Default
    /// 256 KiB.
    pub max_schema_bytes: usize,
    /// Most bytes everything one component lists (tools, prompts,
    /// resources, templates) may take as clients get it. Default 4 MiB.
    pub max_listing_bytes: usize,
    /// Most skills one component's skills directory may hold. Default 256.
    pub max_skills: usize,
    /// Most files one skill (of a component's skills directory) may hold.
    /// Default 512, the skills extension's limit.
    pub max_skill_files: usize,
    /// Most bytes the files of one skill may take together. Default
    /// 16 MiB, the skills extension's limit.
    pub max_skill_bytes: u64,
    /// Deepest nesting of arrays and objects in any JSON value a component
    /// hands the host: what it lists (schemas, `_meta`, skills'
    /// frontmatter) and what it answers (structured content, `_meta`,
    /// input requests). Default 64 (see [`crate::guest_json`]).
    pub max_json_depth: usize,
}

impl RuntimeLimits {
    /// What every call runs under unless its manifest says otherwise.
    pub fn call_limits(&self) -> CallLimits {
        CallLimits {
            memory_bytes: self.max_memory_bytes,
            timeout: self.call_timeout,
            fuel: None,
            max_output_bytes: self.max_output_bytes,
            max_concurrent: None,
        }
    }
}

impl Default for RuntimeLimits {
    fn default() -> Self {
        RuntimeLimits {
            max_memory_bytes: 64 << 20,
            call_timeout: Duration::from_secs(10),
            max_output_bytes: 1 << 20,
            max_concurrent_calls: 256,
            max_events_per_call: 1000,
            max_queued_calls: 1024,
            fuel: false,
            max_host_resources: 256,
            max_http_fields_bytes: 64 << 10,
            max_content_blocks: 1000,
            max_input_requests: 64,
            task_round_timeout: Duration::from_secs(300),
            max_component_bytes: 128 << 20,
            max_schema_bytes: 256 << 10,
            max_listing_bytes: 4 << 20,
            max_skills: 256,
            max_skill_files: 512,
            max_skill_bytes: 16 << 20,
            max_json_depth: crate::guest_json::DEFAULT_MAX_DEPTH,
        }
    }
}

/// The shared machinery every call uses: engine, linkers (WASI p2 granting
/// nothing, plus the `airlock:mcp/host` imports; and the same plus
/// `wasi:http` for components whose manifest allows outbound HTTP), epoch
/// ticker, and the concurrency limit.
pub struct Runtime {
    engine: Engine,
    linker: Linker<CallState>,
    http_linker: Linker<CallState>,
    limits: RuntimeLimits,
    permits: Semaphore,
    /// How many calls are waiting for a permit now.
    queued: std::sync::atomic::AtomicUsize,
    changes: events::ChangeSender,
    changes_receiver: std::sync::Mutex<Option<tokio::sync::mpsc::Receiver<Change>>>,
    sources: PolicySources,
    /// What listing a component runs with: nothing granted, default limits.
    listing_policy: Arc<Policy>,
    /// Advances the epoch while a store lives; every store holds a guard.
    ticker: EpochTicker,
}

/// How many guest change reports may wait for the server to handle them;
/// later ones are dropped.
const CHANGE_QUEUE: usize = 1024;

impl Runtime {
    /// Builds the engine and linker and starts the epoch ticker thread.
    /// Does not need a tokio runtime; calls do.
    pub fn new(limits: RuntimeLimits) -> anyhow::Result<Arc<Runtime>> {
        Runtime::with_sources(limits, PolicySources::default())
    }

    /// [`Runtime::new`], with the secrets manifests may grant and the files
    /// no grant may expose.
    pub fn with_sources(
        limits: RuntimeLimits,
        sources: PolicySources,
    ) -> anyhow::Result<Arc<Runtime>> {
        anyhow::ensure!(
            !limits.call_timeout.is_zero(),
            "call_timeout must be greater than zero"
        );
        let engine = engine::build_engine(&limits)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(anyhow::Error::from)
            .context("failed to link WASI p2")?;
        bindings::Server::add_to_linker::<CallState, HasSelf<events::EventState>>(
            &mut linker,
            |state| &mut state.events,
        )
        .map_err(anyhow::Error::from)
        .context("failed to link the airlock:mcp/host imports")?;
        // Outbound HTTP only for components whose manifest allows it; each
        // request is then checked against the allow list by the hooks.
        let mut http_linker = linker.clone();
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut http_linker)
            .map_err(anyhow::Error::from)
            .context("failed to link wasi:http")?;
        let ticker = EpochTicker::start(&engine, EPOCH_TICK)?;
        let permits = Semaphore::new(limits.max_concurrent_calls);
        let (changes, changes_receiver) = tokio::sync::mpsc::channel(CHANGE_QUEUE);
        let listing_policy = Arc::new(Policy::deny_all(&limits.call_limits()));
        Ok(Arc::new(Runtime {
            engine,
            linker,
            http_linker,
            limits,
            permits,
            queued: std::sync::atomic::AtomicUsize::new(0),
            changes,
            changes_receiver: std::sync::Mutex::new(Some(changes_receiver)),
            sources,
            listing_policy,
            ticker,
        }))
    }

    /// The engine every component must be compiled for.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// The limits every call runs under, unless a manifest sets its own.
    pub fn limits(&self) -> &RuntimeLimits {
        &self.limits
    }

    /// How many instances run now (each holds one of the
    /// `max_concurrent_calls` slots).
    pub fn calls_running(&self) -> usize {
        self.limits.max_concurrent_calls - self.permits.available_permits()
    }

    /// How many calls wait for a slot now.
    pub fn calls_queued(&self) -> usize {
        self.queued.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What a component's manifest is resolved against.
    pub fn policy_context(&self) -> PolicyContext<'_> {
        PolicyContext {
            defaults: self.limits.call_limits(),
            fuel_metered: self.limits.fuel,
            sources: &self.sources,
        }
    }

    /// The most items one outcome may hold.
    pub(crate) fn outcome_limits(&self) -> output::OutcomeLimits {
        output::OutcomeLimits {
            content_blocks: self.limits.max_content_blocks,
            input_requests: self.limits.max_input_requests,
        }
    }

    /// The changes guests report (`notify-list-changed`,
    /// `notify-resource-updated`), for the one task that acts on them.
    /// `None` once taken.
    pub fn take_changes(&self) -> Option<tokio::sync::mpsc::Receiver<Change>> {
        self.changes_receiver
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take()
    }

    /// Refuses `component` if it was built against another version of the
    /// tool contract (see [`contract`]).
    pub(crate) fn check_contract(
        &self,
        component: &wasmtime::component::Component,
    ) -> Result<(), String> {
        contract::check(component, &self.engine)
    }

    /// Links `component` for calls under `policy`: with `wasi:http` if the
    /// policy allows outbound HTTP; without it, any `wasi:http` import fails
    /// the call that uses it (see [`denied`]).
    pub(crate) fn instance_pre(
        &self,
        component: &wasmtime::component::Component,
        policy: &Policy,
    ) -> wasmtime::Result<InstancePre<CallState>> {
        if policy.http.is_empty() {
            let mut linker = self.linker.clone();
            denied::deny_http(&mut linker, &self.engine, component)?;
            linker.instantiate_pre(component)
        } else {
            self.http_linker.instantiate_pre(component)
        }
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}
