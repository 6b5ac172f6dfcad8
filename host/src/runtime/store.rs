//! The `Store` of one call: everything the call may use and nothing else.
//!
//! - a WASI p2 context that grants nothing but the component's policy: the
//!   granted directories (reopened from the handles held since load), the
//!   named variables; no arguments, no sockets or name lookups, an empty
//!   stdin, stdout discarded, stderr captured in a small tail
//!   ([`StderrTail`]) for the log line of a failed call. Most calls never
//!   call a WASI function, so the context is made the first time the guest
//!   does ([`CallWasi`]); only a policy that grants directories has its
//!   context made up front, so that a directory that cannot be reopened
//!   fails the call before it starts;
//! - resource limits: the memory cap, per linear memory (growing past it
//!   traps at once, and the failure is reported as out of memory whatever
//!   the guest does next), per-component instance, table and memory counts,
//!   the host resources the instance may hold and the size of HTTP header
//!   fields;
//! - the call's deadline. The store's epoch deadline is one tick; at every
//!   tick the callback ([`TickPolicy`]) yields to tokio once the guest has
//!   run a whole tick (so a looping guest never holds a worker thread for
//!   two ticks) until the wall-clock deadline has passed, then fails the
//!   call with [`DeadlineExceeded`](super::deadline::DeadlineExceeded);
//! - the event state behind the host imports ([`events`](super::events)).

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::Runtime;
use super::deadline::TickPolicy;
use super::engine::{
    MAX_CORE_INSTANCES_PER_COMPONENT, MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT,
};
use super::error::{CallError, describe};
use super::events::{EventSink, EventState};
use super::http::HttpHooks;
use super::stderr::StderrTail;
use super::ticker::Ticking;
use crate::policy::manifest::DirMode;
use crate::policy::{CallLimits, Policy};

/// Everything one call's `Store` holds.
pub(crate) struct CallState {
    wasi: CallWasi,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_hooks: HttpHooks,
    pub(super) limiter: CallLimiter,
    pub(super) events: EventState,
    /// Keeps the epoch ticking while this store may run guest code.
    _ticking: Ticking,
}

impl WasiHttpView for CallState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.http_hooks,
        }
    }
}

impl WasiView for CallState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: self.wasi.get(),
            table: &mut self.table,
        }
    }
}

/// A call's WASI context, made when the guest first needs it.
///
/// Building one (its clocks, its seeded random generators, its stdio) takes
/// about 2 % of a trivial call's instructions, and most tool calls never
/// call a WASI function: a JSON-in, JSON-out tool reaches WASI only to read
/// a granted file or variable, or to print a panic.
enum CallWasi {
    /// Not needed yet: what to make it from (the policy's variables; no
    /// directories, whose contexts are made up front).
    Deferred {
        env: Option<Arc<Policy>>,
        stderr: StderrTail,
    },
    /// Made (boxed: a context is far larger than what makes it).
    Built(Box<WasiCtx>),
}

impl CallWasi {
    /// The context, made now if it was not yet.
    fn get(&mut self) -> &mut WasiCtx {
        if let CallWasi::Deferred { env, stderr } = self {
            let mut wasi = wasi_builder(stderr, env.as_deref());
            *self = CallWasi::Built(Box::new(wasi.build()));
        }
        match self {
            CallWasi::Built(wasi) => wasi,
            CallWasi::Deferred { .. } => unreachable!("made just above"),
        }
    }
}

/// A WASI context builder granting `policy`'s variables (none if `None`)
/// and nothing else, with stderr going to `stderr`.
fn wasi_builder(stderr: &StderrTail, policy: Option<&Policy>) -> WasiCtxBuilder {
    let mut wasi = WasiCtxBuilder::new();
    wasi.stderr(stderr.clone())
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false);
    for (name, value) in policy.map_or(&[][..], |policy| &policy.env) {
        wasi.env(name, value);
    }
    wasi
}

/// [`StoreLimits`] that also remembers whether it refused to grow a memory,
/// so that a failed call can be reported as out of memory whatever the guest
/// did next.
pub(super) struct CallLimiter {
    limits: StoreLimits,
    pub(super) memory_refused: bool,
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let result = self.limits.memory_growing(current, desired, maximum);
        if !matches!(result, Ok(true)) {
            self.memory_refused = true;
        }
        result
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.memory_refused = true;
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

/// A store ready for one call, with its deadline, stderr tail and limits.
pub(super) struct CallStore {
    pub(super) store: Store<CallState>,
    pub(super) stderr: StderrTail,
    pub(super) label: Arc<str>,
    pub(super) limits: CallLimits,
}

impl Runtime {
    /// A fresh store for one call of `label` under `policy`, failing at
    /// `deadline`. `component` is the file behind the call, for change
    /// reports; `None` while listing (which runs with nothing granted).
    pub(super) fn new_store(
        &self,
        label: Arc<str>,
        deadline: Instant,
        events: Option<EventSink>,
        component: Option<(&Arc<Path>, &Arc<Policy>)>,
    ) -> Result<CallStore, CallError> {
        let stderr = StderrTail::new();
        let (policy, granted) = match component {
            Some((_, policy)) => (policy, true),
            None => (&self.listing_policy, false),
        };
        let wasi = if granted && !policy.dirs.is_empty() {
            let mut wasi = wasi_builder(&stderr, Some(policy));
            for dir in &policy.dirs {
                let perms = match dir.mode {
                    DirMode::ReadOnly => FsPerms::ReadOnly,
                    DirMode::ReadWrite => FsPerms::ReadWrite,
                };
                wasi.preopened_dir(dir.handle_path(), &dir.guest, perms)
                    .map_err(|err| CallError::Instantiate {
                        detail: format!(
                            "cannot open granted directory {}: {err}",
                            dir.host.display()
                        ),
                    })?;
            }
            CallWasi::Built(Box::new(wasi.build()))
        } else {
            CallWasi::Deferred {
                env: granted.then(|| policy.clone()),
                stderr: stderr.clone(),
            }
        };
        let limits = StoreLimitsBuilder::new()
            .memory_size(policy.limits.memory_bytes)
            .instances(MAX_CORE_INSTANCES_PER_COMPONENT as usize)
            .memories(MAX_MEMORIES_PER_COMPONENT as usize)
            .tables(MAX_TABLES_PER_COMPONENT as usize)
            .trap_on_grow_failure(true)
            .build();
        let changes = component.map(|(component, _)| (component.clone(), self.changes.clone()));
        let mut table = ResourceTable::new();
        table.set_max_capacity(self.limits.max_host_resources);
        let mut http = WasiHttpCtx::new();
        http.set_field_size_limit(self.limits.max_http_fields_bytes);
        let state = CallState {
            wasi,
            table,
            http,
            // Listing runs under the deny-all policy: its list is empty.
            http_hooks: HttpHooks {
                allow: policy.http.clone(),
                label: label.clone(),
            },
            limiter: CallLimiter {
                limits,
                memory_refused: false,
            },
            events: EventState::new(
                label.clone(),
                deadline,
                events,
                self.limits.max_events_per_call,
                policy.limits.max_output_bytes,
                changes,
            ),
            _ticking: self.ticker.ticking(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        if self.limits.fuel {
            let fuel = policy.limits.fuel.unwrap_or(u64::MAX);
            store.set_fuel(fuel).map_err(|err| CallError::Instantiate {
                detail: describe(&err),
            })?;
        }
        store.set_epoch_deadline(1);
        let mut ticks = TickPolicy::new(deadline, Instant::now());
        store.epoch_deadline_callback(move |_| {
            ticks.at_tick(Instant::now()).map_err(wasmtime::Error::new)
        });
        Ok(CallStore {
            store,
            stderr,
            label,
            limits: policy.limits.clone(),
        })
    }
}
