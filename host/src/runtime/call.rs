//! One guest call in one fresh `Store`.
//!
//! Every call, and every retry of a multi-round call, gets a new `Store` and a
//! new instance made from the component's pre-instantiated handle
//! ([`CheckedComponent`]: imports resolved and exports type-checked once, at
//! load). Nothing survives from one call to the next, so a
//! tool cannot leak data between callers and a crashed instance cannot poison
//! later calls. With the pooling allocator this costs microseconds (see
//! [`engine`](super::engine)).
//!
//! The store carries everything the call may use and nothing else:
//!
//! - a WASI p2 context that grants nothing: no preopened directories, no
//!   environment variables, no arguments, no sockets or name lookups, an empty
//!   stdin, stdout discarded, stderr captured in a small tail
//!   ([`StderrTail`]) for the log line of a failed call;
//! - resource limits: the memory cap, per linear memory (growing past it
//!   traps at once, and the failure is reported as out of memory whatever
//!   the guest does next), and per-component instance, table and memory
//!   counts;
//! - the call's deadline. The store's epoch deadline is one tick; at every
//!   tick the callback yields to tokio (so a looping guest never holds a
//!   worker thread for more than a tick) until the wall-clock deadline has
//!   passed, then fails the call with [`DeadlineExceeded`]. Host-side waits
//!   (a WASI sleep, a full event channel) are bounded by the same deadline;
//! - the event state behind the `log` and `progress` imports
//!   ([`events`](super::events)).
//!
//! The store is dropped before the call's concurrency permit is released, so
//! the pool can never hold more live instances than it was sized for.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, InstancePre, Lift, Lower, ResourceTable,
    ResourceTableError, TypedFunc,
};
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpView};

use super::Runtime;
use super::bindings::{
    completions_export, prompts_export, resources_export, tools_export, wit, wit_completions,
    wit_prompts, wit_resources,
};
use super::denied::NotGranted;
use super::engine::{
    MAX_CORE_INSTANCES_PER_COMPONENT, MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT,
};
use super::error::CallError;
use super::events::{EventSink, EventState};
use super::http::HttpHooks;
use super::output::Outcome;
use super::stderr::StderrTail;
use crate::policy::manifest::DirMode;
use crate::policy::{CallLimits, Policy};

/// The error a call fails with once its deadline has passed; recognised with
/// `wasmtime::Error::is`.
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("the call's deadline has passed")]
pub(crate) struct DeadlineExceeded;

/// A call's deadline passed while it waited on the host (a WASI sleep, a
/// full event channel); running guest code is stopped by the epoch instead.
#[derive(Debug)]
pub(crate) struct DeadlinePassed;

/// Runs `future` until `deadline`. The timer is armed only if the future
/// does not finish on its first poll: most calls never wait on the host, and
/// they then pay nothing for a timer they would never need.
async fn within<F: Future>(deadline: Instant, future: F) -> Result<F::Output, DeadlinePassed> {
    let mut future = std::pin::pin!(future);
    let mut timer: Option<Pin<Box<tokio::time::Sleep>>> = None;
    std::future::poll_fn(|cx| {
        if let Poll::Ready(output) = future.as_mut().poll(cx) {
            return Poll::Ready(Ok(output));
        }
        let timer =
            timer.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline.into())));
        timer.as_mut().poll(cx).map(|()| Err(DeadlinePassed))
    })
    .await
}

/// Everything one call's `Store` holds.
pub(crate) struct CallState {
    wasi: WasiCtx,
    table: ResourceTable,
    http: WasiHttpCtx,
    http_hooks: HttpHooks,
    limiter: CallLimiter,
    pub(crate) events: EventState,
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
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

/// [`StoreLimits`] that also remembers whether it refused to grow a memory,
/// so that a failed call can be reported as out of memory whatever the guest
/// did next.
struct CallLimiter {
    limits: StoreLimits,
    memory_refused: bool,
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
struct CallStore {
    store: Store<CallState>,
    stderr: StderrTail,
    label: Arc<str>,
    limits: CallLimits,
}

impl Runtime {
    /// Waits for a concurrency permit, up to `deadline` (`timeout` is the
    /// limit to report; the server's default if `None`).
    async fn permit(
        &self,
        deadline: Instant,
        timeout: Option<Duration>,
    ) -> Result<SemaphorePermit<'_>, CallError> {
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(permit);
        }
        let _waiting =
            QueueSlot::take(&self.queued, self.limits.max_queued_calls).ok_or(CallError::Busy {
                running: self.limits.max_concurrent_calls,
                waiting: self.limits.max_queued_calls,
            })?;
        match tokio::time::timeout_at(deadline.into(), self.permits.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; treat it like a timeout regardless.
            Ok(Err(_)) | Err(_) => Err(CallError::Timeout {
                limit: timeout.unwrap_or(self.limits.call_timeout),
            }),
        }
    }

    /// A fresh store for one call of `label` under `policy`, failing at
    /// `deadline`. `component` is the file behind the call, for change
    /// reports; `None` while listing (which runs with nothing granted).
    fn new_store(
        &self,
        label: Arc<str>,
        deadline: Instant,
        events: Option<EventSink>,
        component: Option<(&Arc<Path>, &Policy)>,
    ) -> Result<CallStore, CallError> {
        let stderr = StderrTail::new();
        let mut wasi = WasiCtxBuilder::new();
        wasi.stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        let (policy, granted) = match component {
            Some((_, policy)) => (policy, true),
            None => (&self.listing_policy, false),
        };
        if granted {
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
            for (name, value) in &policy.env {
                wasi.env(name, value);
            }
        }
        let wasi = wasi.build();
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
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(wasmtime::Error::new(DeadlineExceeded))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        Ok(CallStore {
            store,
            stderr,
            label,
            limits: policy.limits.clone(),
        })
    }

    /// Links a compiled component and lists what it serves, in one fresh
    /// instance: `list-tools`, `list-prompts`, `list-resources` and
    /// `list-resource-templates`, for each interface it exports. Also
    /// returns the component's [`CheckedComponent`] for later calls.
    ///
    /// A failure is not logged here: it comes back with the guest's stderr,
    /// for the caller's own (single) log line.
    pub(crate) async fn list_component(
        &self,
        instance_pre: &InstancePre<CallState>,
        source: Arc<Path>,
        policy: Arc<Policy>,
    ) -> Result<(Listing, CheckedComponent), ListError> {
        let lookups = Lookups::new(instance_pre).map_err(ListError::unusable)?;
        let listing = self.run_listing(instance_pre, &lookups, &source).await?;
        // Limits that span calls belong to this version of the component:
        // made once here, kept by every relisting (see `relist_component`).
        let slots = policy
            .limits
            .max_concurrent
            .map(|n| Arc::new(Semaphore::new(n as usize)));
        let checked = CheckedComponent {
            instance_pre: instance_pre.clone(),
            exports: lookups.exports(instance_pre),
            source,
            policy,
            slots,
        };
        Ok((listing, checked))
    }

    /// Lists a loaded component again (it reported that a list changed).
    /// The component stays the same version: its policy and the limits that
    /// span calls (its concurrency slots) are kept.
    pub(crate) async fn relist_component(
        &self,
        component: &CheckedComponent,
    ) -> Result<Listing, ListError> {
        let pre = &component.instance_pre;
        let lookups = Lookups::new(pre).map_err(ListError::unusable)?;
        self.run_listing(pre, &lookups, &component.source).await
    }

    /// Runs the list functions of every interface `instance_pre` exports in
    /// one fresh instance, with nothing granted. `load` type-checks every
    /// function of each interface against the world on the way, which is
    /// what makes [`CheckedComponent`] sound.
    async fn run_listing(
        &self,
        instance_pre: &InstancePre<CallState>,
        lookups: &Lookups,
        source: &Arc<Path>,
    ) -> Result<Listing, ListError> {
        let deadline = Instant::now() + self.limits.call_timeout;
        let permit = self
            .permit(deadline, None)
            .await
            .map_err(|error| ListError {
                error,
                stderr: None,
            })?;
        let label: Arc<str> = source
            .file_name()
            .map_or_else(
                || source.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
            .into();
        let mut call = self
            .new_store(label, deadline, None, None)
            .map_err(|error| ListError {
                error,
                stderr: None,
            })?;
        let store = &mut call.store;
        let result = within(deadline, async {
            let instance = instance_pre
                .instantiate_async(&mut *store)
                .await
                .map_err(Failure::Start)?;
            let mut listing = Listing::default();
            if let Some(tools) = &lookups.tools {
                let guest = tools.load(&mut *store, &instance).map_err(Failure::Start)?;
                listing.tools = guest
                    .call_list_tools(&mut *store)
                    .await
                    .map_err(Failure::Run)?;
            }
            if let Some(prompts) = &lookups.prompts {
                let guest = prompts
                    .load(&mut *store, &instance)
                    .map_err(Failure::Start)?;
                listing.prompts = guest
                    .call_list_prompts(&mut *store)
                    .await
                    .map_err(Failure::Run)?;
            }
            if let Some(resources) = &lookups.resources {
                let guest = resources
                    .load(&mut *store, &instance)
                    .map_err(Failure::Start)?;
                listing.resources = guest
                    .call_list_resources(&mut *store)
                    .await
                    .map_err(Failure::Run)?;
                listing.templates = guest
                    .call_list_resource_templates(&mut *store)
                    .await
                    .map_err(Failure::Run)?;
            }
            if let Some(completions) = &lookups.completions {
                completions
                    .load(&mut *store, &instance)
                    .map_err(Failure::Start)?;
            }
            Ok(listing)
        })
        .await;
        let (result, stderr, _label) = self.finish(call, permit, result, |_| Ok(()));
        result.map_err(|error| ListError {
            error,
            stderr: stderr.text(),
        })
    }

    /// Calls `call-tool` in a fresh instance of `component`.
    pub(crate) async fn call_tool(
        &self,
        component: &CheckedComponent,
        name: Arc<str>,
        arguments: &str,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit::CallOutcome, CallError> {
        let export = component.exports.call_tool;
        let params = (&*name, arguments, round);
        self.invoke(component, export, name.clone(), params, events)
            .await
    }

    /// Calls `get-prompt` in a fresh instance of `component`.
    pub(crate) async fn get_prompt(
        &self,
        component: &CheckedComponent,
        name: Arc<str>,
        arguments: &[(String, String)],
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_prompts::PromptOutcome, CallError> {
        let export = component.exports.get_prompt;
        let params = (&*name, arguments, round);
        self.invoke(component, export, name.clone(), params, events)
            .await
    }

    /// Calls `read-resource` in a fresh instance of `component`.
    pub(crate) async fn read_resource(
        &self,
        component: &CheckedComponent,
        uri: Arc<str>,
        template: Option<&wit_resources::TemplateMatch>,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_resources::ReadOutcome, CallError> {
        let export = component.exports.read_resource;
        let params = (&*uri, template, round);
        self.invoke(component, export, uri.clone(), params, events)
            .await
    }

    /// Calls `complete` in a fresh instance of `component`; `None` if the
    /// component does not export completions.
    pub(crate) async fn complete(
        &self,
        component: &CheckedComponent,
        request: &wit_completions::CompletionRequest,
    ) -> Option<Result<wit_completions::Completion, CallError>> {
        let export = component.exports.complete;
        export?;
        let label: Arc<str> = match &request.target {
            wit_completions::CompletionTarget::Prompt(name) => name.as_str().into(),
            wit_completions::CompletionTarget::ResourceTemplate(uri) => uri.as_str().into(),
        };
        Some(
            self.invoke(component, export, label, (request,), None)
                .await,
        )
    }

    /// Calls one export of a fresh instance of `component` with `params`.
    /// `label` names the call in logs. The export's types must be the ones
    /// `Lookups::load` checked for it (see [`CheckedComponent`]).
    async fn invoke<P, O>(
        &self,
        component: &CheckedComponent,
        export: Option<ComponentExportIndex>,
        label: Arc<str>,
        params: P,
        events: Option<EventSink>,
    ) -> Result<O, CallError>
    where
        P: ComponentNamedList + Lower + Send + Sync,
        O: Lift + Outcome + Send + Sync + 'static,
    {
        let policy = &component.policy;
        let deadline = Instant::now() + policy.limits.timeout;
        // The component's own slots first (if its manifest limits them),
        // then one of the server's.
        let _slot = match &component.slots {
            None => None,
            Some(slots) => Some(
                tokio::time::timeout_at(deadline.into(), slots.clone().acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .ok_or(CallError::Timeout {
                        limit: policy.limits.timeout,
                    })?,
            ),
        };
        let permit = self.permit(deadline, Some(policy.limits.timeout)).await?;
        let mut call =
            self.new_store(label, deadline, events, Some((&component.source, policy)))?;
        let store = &mut call.store;
        let result = within(deadline, async {
            let func = component
                .instantiate::<P, O>(&mut *store, export)
                .await
                .map_err(Failure::Start)?;
            let (output,) = func
                .call_async(&mut *store, params)
                .await
                .map_err(Failure::Run)?;
            Ok(output)
        })
        .await;
        let limits = self.outcome_limits();
        let (result, stderr, label) = self.finish(call, permit, result, |output: &O| {
            output.counts().check(&limits)
        });
        if let Err(err) = &result {
            log_failure(&label, &component.source, err, &stderr);
        }
        result
    }

    /// Turns the raw result of a call into the caller's result, and releases
    /// the store, then the permit. Returns the guest's stderr and the call's
    /// label for the caller's log line.
    fn finish<R>(
        &self,
        call: CallStore,
        permit: SemaphorePermit<'_>,
        result: Result<Result<R, Failure>, DeadlinePassed>,
        check: impl FnOnce(&R) -> Result<(), CallError>,
    ) -> (Result<R, CallError>, StderrTail, Arc<str>) {
        let CallStore {
            store,
            stderr,
            label,
            limits,
        } = call;
        let state = store.data();
        let result = match result {
            Err(DeadlinePassed) => Err(CallError::Timeout {
                limit: limits.timeout,
            }),
            Ok(Ok(value)) => check(&value).map(|()| value),
            Ok(Err(failure)) => Err(classify(
                failure,
                &limits,
                state.limiter.memory_refused,
                self.limits.max_host_resources,
            )),
        };
        let dropped = state.events.dropped();
        if dropped > 0 {
            tracing::debug!(
                target: "airlock::runtime",
                tool = &*label,
                dropped,
                "dropped guest events (over the per-call limit, or progress that did not grow)"
            );
        }
        drop(store);
        drop(permit);
        (result, stderr, label)
    }
}

/// One place in the queue of calls waiting for a permit; given back when
/// dropped.
struct QueueSlot<'a>(&'a std::sync::atomic::AtomicUsize);

impl<'a> QueueSlot<'a> {
    /// A place, unless `max` calls are already waiting.
    fn take(queued: &'a std::sync::atomic::AtomicUsize, max: usize) -> Option<QueueSlot<'a>> {
        use std::sync::atomic::Ordering;
        queued
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| QueueSlot(queued))
    }
}

impl Drop for QueueSlot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// Why a call failed, from wasmtime's error and what the store saw.
fn classify(
    failure: Failure,
    limits: &CallLimits,
    memory_refused: bool,
    max_host_resources: usize,
) -> CallError {
    let (err, starting) = match failure {
        Failure::Start(err) => (err, true),
        Failure::Run(err) => (err, false),
    };
    if err.is::<DeadlineExceeded>() {
        CallError::Timeout {
            limit: limits.timeout,
        }
    } else if let Some(denied) = err.downcast_ref::<NotGranted>() {
        CallError::NotGranted {
            import: denied.import.clone(),
            reason: denied.reason,
        }
    } else if matches!(
        err.downcast_ref::<ResourceTableError>(),
        Some(ResourceTableError::Full)
    ) {
        CallError::TooManyResources {
            limit: max_host_resources,
        }
    } else if memory_refused {
        CallError::OutOfMemory {
            limit: limits.memory_bytes,
        }
    } else if err.downcast_ref::<Trap>() == Some(&Trap::OutOfFuel) {
        CallError::OutOfFuel {
            limit: limits.fuel.unwrap_or(0),
        }
    } else if starting && !err.is::<Trap>() {
        CallError::Instantiate {
            detail: describe(&err),
        }
    } else {
        CallError::Trapped {
            detail: describe(&err),
        }
    }
}

/// Everything a component serves, as its list functions described it
/// (not yet validated).
#[derive(Debug, Default, Clone)]
pub(crate) struct Listing {
    /// `list-tools`
    pub(crate) tools: Vec<wit::Tool>,
    /// `list-prompts`
    pub(crate) prompts: Vec<wit_prompts::Prompt>,
    /// `list-resources`
    pub(crate) resources: Vec<wit_resources::Resource>,
    /// `list-resource-templates`
    pub(crate) templates: Vec<wit_resources::ResourceTemplate>,
}

/// The generated lookups of each interface a component exports.
struct Lookups {
    tools: Option<tools_export::GuestIndices>,
    prompts: Option<prompts_export::GuestIndices>,
    resources: Option<resources_export::GuestIndices>,
    completions: Option<completions_export::GuestIndices>,
}

impl Lookups {
    /// Finds the interfaces `pre` exports; an interface that is exported
    /// but lacks a function is an error, and so is exporting none.
    fn new(pre: &InstancePre<CallState>) -> wasmtime::Result<Lookups> {
        let component = pre.component();
        let exports = |name: &str| component.get_export_index(None, name).is_some();
        let lookups = Lookups {
            tools: exports(TOOLS_INTERFACE)
                .then(|| tools_export::GuestIndices::new(pre))
                .transpose()?,
            prompts: exports(PROMPTS_INTERFACE)
                .then(|| prompts_export::GuestIndices::new(pre))
                .transpose()?,
            resources: exports(RESOURCES_INTERFACE)
                .then(|| resources_export::GuestIndices::new(pre))
                .transpose()?,
            completions: exports(COMPLETIONS_INTERFACE)
                .then(|| completions_export::GuestIndices::new(pre))
                .transpose()?,
        };
        if lookups.tools.is_none()
            && lookups.prompts.is_none()
            && lookups.resources.is_none()
            && lookups.completions.is_none()
        {
            wasmtime::bail!(
                "it exports none of `{TOOLS_INTERFACE}`, `{PROMPTS_INTERFACE}`, `{RESOURCES_INTERFACE}` and `{COMPLETIONS_INTERFACE}` (build it against world `airlock:mcp/server`)"
            );
        }
        Ok(lookups)
    }

    /// The indices of the per-call functions of the interfaces found.
    fn exports(&self, pre: &InstancePre<CallState>) -> Exports {
        let component = pre.component();
        let find = |found: bool, iface: &str, func: &str| {
            let iface = component.get_export_index(None, iface).filter(|_| found)?;
            component.get_export_index(Some(&iface), func)
        };
        Exports {
            call_tool: find(self.tools.is_some(), TOOLS_INTERFACE, "call-tool"),
            get_prompt: find(self.prompts.is_some(), PROMPTS_INTERFACE, "get-prompt"),
            read_resource: find(
                self.resources.is_some(),
                RESOURCES_INTERFACE,
                "read-resource",
            ),
            complete: find(
                self.completions.is_some(),
                COMPLETIONS_INTERFACE,
                "complete",
            ),
        }
    }
}

/// The per-call exports of a component, by pre-resolved index.
#[derive(Clone, Copy, Default)]
struct Exports {
    call_tool: Option<ComponentExportIndex>,
    get_prompt: Option<ComponentExportIndex>,
    read_resource: Option<ComponentExportIndex>,
    complete: Option<ComponentExportIndex>,
}

/// A linked component whose exports have been type-checked against the
/// `server` world, ready for calls.
///
/// The generated bindings type-check every export each time they
/// instantiate, which walks the whole outcome type (a few microseconds, a
/// sizeable share of a call). Export types belong to the component, not to
/// an instance, so checking once, at load, is enough: a `CheckedComponent`
/// can only be made by [`Runtime::list_component`] after the checked
/// instantiation succeeded, and each call then looks its function up by a
/// pre-resolved index without checking again.
#[derive(Clone)]
pub(crate) struct CheckedComponent {
    instance_pre: InstancePre<CallState>,
    source: Arc<Path>,
    exports: Exports,
    /// What its calls are granted and limited to.
    policy: Arc<Policy>,
    /// Its own concurrency limit, if its manifest sets one.
    slots: Option<Arc<Semaphore>>,
}

impl CheckedComponent {
    /// The component's policy.
    pub(crate) fn policy(&self) -> &Arc<Policy> {
        &self.policy
    }

    /// The `airlock:mcp` interfaces it exports.
    pub(crate) fn exported_interfaces(&self) -> Vec<&'static str> {
        let exports = &self.exports;
        [
            (exports.call_tool.is_some(), "tools"),
            (exports.get_prompt.is_some(), "prompts"),
            (exports.read_resource.is_some(), "resources"),
            (exports.complete.is_some(), "completions"),
        ]
        .into_iter()
        .filter_map(|(exported, name)| exported.then_some(name))
        .collect()
    }

    /// A fresh instance's function `export`.
    async fn instantiate<P, O>(
        &self,
        store: &mut Store<CallState>,
        export: Option<ComponentExportIndex>,
    ) -> wasmtime::Result<TypedFunc<P, (O,)>>
    where
        P: ComponentNamedList + Lower,
        O: Lift,
    {
        let export =
            export.ok_or_else(|| wasmtime::format_err!("the component lacks this export"))?;
        let instance = self.instance_pre.instantiate_async(&mut *store).await?;
        let func = instance
            .get_func(&mut *store, export)
            .ok_or_else(|| wasmtime::format_err!("the component lacks this export"))?;
        // SAFETY: a `CheckedComponent` is only made by `list_component`,
        // after the generated bindings type-checked every function of every
        // exported interface against the world, with the very parameter and
        // result types the `Runtime` methods above pass here; an export's
        // type is fixed by the component, so it is the same in every
        // instance.
        Ok(unsafe { TypedFunc::new_unchecked(func) })
    }
}

/// The exported interfaces, as the generated bindings name them.
const TOOLS_INTERFACE: &str = "airlock:mcp/tools@0.1.0";
const PROMPTS_INTERFACE: &str = "airlock:mcp/prompts@0.1.0";
const RESOURCES_INTERFACE: &str = "airlock:mcp/resources@0.1.0";
const COMPLETIONS_INTERFACE: &str = "airlock:mcp/completions@0.1.0";

/// A component that could not be listed, with what the guest wrote to
/// stderr.
#[derive(Debug)]
pub(crate) struct ListError {
    /// Why listing failed.
    pub(crate) error: CallError,
    /// The tail of the guest's stderr, if it wrote anything.
    pub(crate) stderr: Option<String>,
}

impl ListError {
    /// A component whose exports cannot be used (found before it ran).
    fn unusable(error: wasmtime::Error) -> ListError {
        ListError {
            error: CallError::Instantiate {
                detail: describe(&error),
            },
            stderr: None,
        }
    }
}

/// Logs a failed call: one line with the tool (prompt, resource), the
/// component file, the error, wasmtime's detail and the tail of the guest's
/// stderr (where panics are printed).
fn log_failure(label: &str, component: &Path, err: &CallError, stderr: &StderrTail) {
    let detail = match err {
        CallError::Trapped { detail } | CallError::Instantiate { detail } => Some(detail.as_str()),
        _ => None,
    };
    tracing::warn!(
        target: "airlock::runtime",
        tool = label,
        file = %component.display(),
        error = %err,
        detail,
        stderr = stderr.text(),
        "call failed"
    );
}

/// Where a call failed: while instantiating, or while running the export.
enum Failure {
    Start(wasmtime::Error),
    Run(wasmtime::Error),
}

/// The root cause first (e.g. "wasm trap: wasm `unreachable` instruction
/// executed"), then the context around it (e.g. the wasm backtrace).
fn describe(err: &wasmtime::Error) -> String {
    let causes: Vec<String> = err.chain().map(|cause| cause.to_string()).collect();
    match causes.split_last() {
        None => String::new(),
        Some((root, [])) => root.clone(),
        Some((root, context)) => format!("{root} ({})", context.join(": ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_wait_queue_is_bounded_and_gives_places_back() {
        let queued = AtomicUsize::new(0);
        let first = QueueSlot::take(&queued, 2).expect("room for two");
        let second = QueueSlot::take(&queued, 2).expect("room for two");
        assert!(
            QueueSlot::take(&queued, 2).is_none(),
            "a third waits nowhere"
        );
        drop(first);
        assert!(
            QueueSlot::take(&queued, 2).is_some(),
            "a place was given back"
        );
        drop(second);
        assert_eq!(queued.load(Ordering::SeqCst), 0);
        assert!(QueueSlot::take(&queued, 0).is_none(), "no queue at all");
    }
}
