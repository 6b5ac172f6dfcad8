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
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tokio::sync::SemaphorePermit;
use wasmtime::component::{ComponentExportIndex, InstancePre, ResourceTable, TypedFunc};
use wasmtime::{ResourceLimiter, Store, StoreLimits, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder, WasiCtxView, WasiView};

use super::Runtime;
use super::bindings::{ToolProviderPre, wit};
use super::engine::{
    MAX_CORE_INSTANCES_PER_COMPONENT, MAX_MEMORIES_PER_COMPONENT, MAX_TABLES_PER_COMPONENT,
};
use super::error::CallError;
use super::events::{EventSink, EventState};
use super::output::OutputSize;
use super::stderr::StderrTail;

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
    limiter: CallLimiter,
    pub(crate) events: EventState,
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

/// A store ready for one call, with its deadline and stderr tail.
struct CallStore {
    store: Store<CallState>,
    stderr: StderrTail,
    label: Arc<str>,
}

impl Runtime {
    /// Waits for a concurrency permit, up to `deadline`.
    async fn permit(&self, deadline: Instant) -> Result<SemaphorePermit<'_>, CallError> {
        if let Ok(permit) = self.permits.try_acquire() {
            return Ok(permit);
        }
        match tokio::time::timeout_at(deadline.into(), self.permits.acquire()).await {
            Ok(Ok(permit)) => Ok(permit),
            // The semaphore is never closed; treat it like a timeout regardless.
            Ok(Err(_)) | Err(_) => Err(CallError::Timeout {
                limit: self.limits.call_timeout,
            }),
        }
    }

    /// A fresh store for one call of `label`, failing at `deadline`.
    fn new_store(
        &self,
        label: Arc<str>,
        deadline: Instant,
        events: Option<EventSink>,
    ) -> CallStore {
        let stderr = StderrTail::new();
        let wasi = WasiCtxBuilder::new()
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let limits = StoreLimitsBuilder::new()
            .memory_size(self.limits.max_memory_bytes)
            .instances(MAX_CORE_INSTANCES_PER_COMPONENT as usize)
            .memories(MAX_MEMORIES_PER_COMPONENT as usize)
            .tables(MAX_TABLES_PER_COMPONENT as usize)
            .trap_on_grow_failure(true)
            .build();
        let state = CallState {
            wasi,
            table: ResourceTable::new(),
            limiter: CallLimiter {
                limits,
                memory_refused: false,
            },
            events: EventState::new(
                label.clone(),
                deadline,
                events,
                self.limits.max_events_per_call,
            ),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|state| &mut state.limiter);
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Err(wasmtime::Error::new(DeadlineExceeded))
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        CallStore {
            store,
            stderr,
            label,
        }
    }

    /// Calls `list-tools` of a component in a fresh instance. On success,
    /// also returns the component's [`CheckedComponent`] for later calls.
    /// A failure is not logged here: it comes back with the guest's stderr,
    /// for the caller's own (single) log line.
    pub(crate) async fn list_tools(
        &self,
        pre: &ToolProviderPre<CallState>,
        label: Arc<str>,
    ) -> Result<(Vec<wit::Tool>, CheckedComponent), ListToolsError> {
        let deadline = Instant::now() + self.limits.call_timeout;
        let permit = self
            .permit(deadline)
            .await
            .map_err(|error| ListToolsError {
                error,
                stderr: None,
            })?;
        let mut call = self.new_store(label, deadline, None);
        let store = &mut call.store;
        let result = within(deadline, async {
            // The generated bindings type-check both exports against the
            // world here, which is what makes `CheckedComponent` sound.
            let instance = pre
                .instantiate_async(&mut *store)
                .await
                .map_err(Failure::Start)?;
            instance
                .airlock_mcp_tools()
                .call_list_tools(&mut *store)
                .await
                .map_err(Failure::Run)
        })
        .await;
        let (result, stderr, _label) = self.finish(call, permit, result, |_| Ok(()));
        let tools = result.map_err(|error| ListToolsError {
            error,
            stderr: stderr.text(),
        })?;
        let checked = CheckedComponent::new(pre).map_err(|err| ListToolsError {
            error: CallError::Instantiate {
                detail: describe(&err),
            },
            stderr: None,
        })?;
        Ok((tools, checked))
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
        let deadline = Instant::now() + self.limits.call_timeout;
        let permit = self.permit(deadline).await?;
        let mut call = self.new_store(name.clone(), deadline, events);
        let store = &mut call.store;
        let result = within(deadline, async {
            let call_tool = component
                .instantiate(&mut *store)
                .await
                .map_err(Failure::Start)?;
            let (outcome,) = call_tool
                .call_async(&mut *store, (&name, arguments, round))
                .await
                .map_err(Failure::Run)?;
            Ok(outcome)
        })
        .await;
        let limit = self.limits.max_output_bytes;
        let (result, stderr, label) =
            self.finish(call, permit, result, |outcome: &wit::CallOutcome| {
                let size = outcome.output_size();
                if size > limit {
                    Err(CallError::OutputTooLarge { size, limit })
                } else {
                    Ok(())
                }
            });
        if let Err(err) = &result {
            log_failure(&label, err, &stderr);
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
        } = call;
        let state = store.data();
        let result = match result {
            Err(DeadlinePassed) => Err(CallError::Timeout {
                limit: self.limits.call_timeout,
            }),
            Ok(Ok(value)) => check(&value).map(|()| value),
            Ok(Err(failure)) => Err(self.classify(failure, state.limiter.memory_refused)),
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

    fn classify(&self, failure: Failure, memory_refused: bool) -> CallError {
        let (err, starting) = match failure {
            Failure::Start(err) => (err, true),
            Failure::Run(err) => (err, false),
        };
        if err.is::<DeadlineExceeded>() {
            CallError::Timeout {
                limit: self.limits.call_timeout,
            }
        } else if memory_refused {
            CallError::OutOfMemory {
                limit: self.limits.max_memory_bytes,
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
}

/// A linked component whose exports have been type-checked against the
/// `tool-provider` world, ready for calls.
///
/// The generated bindings type-check every export each time they
/// instantiate, which walks the whole `call-outcome` type (a few
/// microseconds, a sizeable share of a call). Export types belong to the
/// component, not to an instance, so checking once, at load, is enough: a
/// `CheckedComponent` can only be made by [`Runtime::list_tools`] after the
/// checked instantiation succeeded, and each call then looks `call-tool` up
/// by its pre-resolved index without checking again.
#[derive(Clone)]
pub(crate) struct CheckedComponent {
    instance_pre: InstancePre<CallState>,
    call_tool: ComponentExportIndex,
}

impl CheckedComponent {
    /// Must only be called once `pre` has been instantiated through the
    /// generated (type-checking) bindings.
    fn new(pre: &ToolProviderPre<CallState>) -> wasmtime::Result<CheckedComponent> {
        let component = pre.instance_pre().component();
        let call_tool = component
            .get_export_index(None, TOOLS_INTERFACE)
            .and_then(|tools| component.get_export_index(Some(&tools), "call-tool"))
            .ok_or_else(|| wasmtime::format_err!("no export `call-tool` in `{TOOLS_INTERFACE}`"))?;
        Ok(CheckedComponent {
            instance_pre: pre.instance_pre().clone(),
            call_tool,
        })
    }

    /// A fresh instance's `call-tool`.
    async fn instantiate(
        &self,
        store: &mut Store<CallState>,
    ) -> wasmtime::Result<TypedFunc<(&str, &str, &wit::Round), (wit::CallOutcome,)>> {
        let instance = self.instance_pre.instantiate_async(&mut *store).await?;
        let func = instance
            .get_func(&mut *store, self.call_tool)
            .ok_or_else(|| wasmtime::format_err!("no export `call-tool`"))?;
        // SAFETY: `CheckedComponent::new` is only reached after the generated
        // bindings instantiated this very component and type-checked its
        // `call-tool` export against exactly these parameter and result
        // types; an export's type is fixed by the component, so it is the
        // same in every instance.
        Ok(unsafe { TypedFunc::new_unchecked(func) })
    }
}

/// The exported interface of the `tool-provider` world, as the generated
/// bindings name it.
const TOOLS_INTERFACE: &str = "airlock:mcp/tools@0.1.0";

/// A failed `list-tools` call, with what the guest wrote to stderr.
#[derive(Debug)]
pub(crate) struct ListToolsError {
    /// Why the call failed.
    pub(crate) error: CallError,
    /// The tail of the guest's stderr, if it wrote anything.
    pub(crate) stderr: Option<String>,
}

/// Logs a failed tool call: one line with the tool, the error, wasmtime's
/// detail and the tail of the guest's stderr (where panics are printed).
fn log_failure(label: &str, err: &CallError, stderr: &StderrTail) {
    let detail = match err {
        CallError::Trapped { detail } | CallError::Instantiate { detail } => Some(detail.as_str()),
        _ => None,
    };
    tracing::warn!(
        target: "airlock::runtime",
        tool = label,
        error = %err,
        detail,
        stderr = stderr.text(),
        "tool call failed"
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
