//! One guest call: a concurrency permit, a fresh [`Store`](super::store)
//! and instance of the component's [`CheckedComponent`], the export called,
//! and what came out classified ([`CallError`]) and bounded ([`Outcome`]
//! counts).
//!
//! Every call, and every retry of a multi-round call, gets a new `Store` and a
//! new instance made from the component's pre-instantiated handle (imports
//! resolved and exports type-checked once, at load). Nothing survives from
//! one call to the next, so a tool cannot leak data between callers and a
//! crashed instance cannot poison later calls. With the pooling allocator
//! this costs microseconds (see [`engine`](super::engine)).
//!
//! The store is dropped before the call's concurrency permit is released, so
//! the pool can never hold more live instances than it was sized for.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{Semaphore, SemaphorePermit};
use wasmtime::Trap;
use wasmtime::component::{
    ComponentExportIndex, ComponentNamedList, InstancePre, Lift, Lower, ResourceTableError,
};

use super::Runtime;
use super::bindings::{wit, wit_completions, wit_prompts, wit_resources};
use super::checked::{CheckedComponent, Listing, Lookups};
use super::deadline::{DeadlineExceeded, DeadlinePassed, within};
use super::denied::NotGranted;
use super::error::{CallError, describe};
use super::events::EventSink;
use super::output::Outcome;
use super::stderr::StderrTail;
use super::store::{CallState, CallStore};
use crate::metrics;
use crate::policy::{CallLimits, Policy};
use crate::telemetry::ChildSpan;

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
        let result = within(deadline, || async {
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

    /// Calls `call-tool` in a fresh instance of `component`, with the tool's
    /// own `name`; `label` (its name as served) names the call in logs.
    pub(crate) async fn call_tool(
        &self,
        component: &CheckedComponent,
        name: &str,
        label: Arc<str>,
        arguments: &str,
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit::CallOutcome, CallError> {
        let export = component.exports.call_tool;
        let params = (name, arguments, round);
        // A task's round runs in the background, with its own deadline.
        let timeout = if round.task {
            self.limits.task_round_timeout
        } else {
            component.policy.limits.timeout
        };
        self.invoke(component, export, label, params, events, timeout)
            .await
    }

    /// Calls `get-prompt` in a fresh instance of `component`, with the
    /// prompt's own `name`; `label` (its name as served) names it in logs.
    pub(crate) async fn get_prompt(
        &self,
        component: &CheckedComponent,
        name: &str,
        label: Arc<str>,
        arguments: &[(String, String)],
        round: &wit::Round,
        events: Option<EventSink>,
    ) -> Result<wit_prompts::PromptOutcome, CallError> {
        let export = component.exports.get_prompt;
        let params = (name, arguments, round);
        let timeout = component.policy.limits.timeout;
        self.invoke(component, export, label, params, events, timeout)
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
        let timeout = component.policy.limits.timeout;
        self.invoke(component, export, uri.clone(), params, events, timeout)
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
            self.invoke(
                component,
                export,
                label,
                (request,),
                None,
                component.policy.limits.timeout,
            )
            .await,
        )
    }

    /// Calls one export of a fresh instance of `component` with `params`,
    /// within `timeout` (the component's deadline, or a task round's).
    /// `label` names the call in logs. The export's types must be the ones
    /// `Lookups::load` checked for it (see [`CheckedComponent`]).
    async fn invoke<P, O>(
        &self,
        component: &CheckedComponent,
        export: Option<ComponentExportIndex>,
        label: Arc<str>,
        params: P,
        events: Option<EventSink>,
        timeout: Duration,
    ) -> Result<O, CallError>
    where
        P: ComponentNamedList + Lower + Send + Sync,
        O: Lift + Outcome + Send + Sync + 'static,
    {
        let policy = &component.policy;
        let deadline = Instant::now() + timeout;
        // The component's own slots first (if its manifest limits them),
        // then one of the server's.
        let _slot = match &component.slots {
            None => None,
            Some(slots) => Some(
                tokio::time::timeout_at(deadline.into(), slots.clone().acquire_owned())
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .ok_or(CallError::Timeout { limit: timeout })
                    .inspect_err(CallError::count)?,
            ),
        };
        let permit = self
            .permit(deadline, Some(timeout))
            .await
            .inspect_err(CallError::count)?;
        let mut call =
            self.new_store(label, deadline, events, Some((&component.source, policy)))?;
        call.limits.timeout = timeout;
        let store = &mut call.store;
        // Ended once the call's outcome is classified (a deadline, the
        // memory cap, a trap).
        let mut guest_call = None;
        let result = within(deadline, || async {
            let started = metrics::started();
            let instantiating = ChildSpan::start("instantiate");
            let func = component.instantiate::<P, O>(&mut *store, export).await;
            instantiating.end(&func);
            let func = func.map_err(Failure::Start)?;
            metrics::instantiated(started);
            guest_call = Some(ChildSpan::start("guest call"));
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
        if let Some(span) = guest_call {
            span.end(&result);
        }
        if let Err(err) = &result {
            log_failure(&label, &component.source, err, &stderr);
            err.count();
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
