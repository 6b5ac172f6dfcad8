//! Prometheus metrics, served on `--metrics-listen`
//! ([`serve::metrics`](crate::serve::metrics)).
//!
//! The families follow the OpenTelemetry conventions for MCP servers where
//! they have one (`mcp.server.operation.duration` becomes
//! `mcp_server_operation_duration_seconds`, its attributes labels with
//! underscores), and are Airlock's own (`airlock_*`) for the sandbox, the
//! state, the sessions and the tasks.
//!
//! Every label takes values from a bounded set: method names Airlock
//! serves, tool and prompt names that are loaded, JSON-RPC codes Airlock
//! answers with, fixed kinds and reasons. Anything a client makes up (an
//! unknown method, tool or prompt, an odd error code) never becomes a label
//! value: it is `_OTHER`, or the label is left empty. The set stays bounded
//! over time too: when the registry is replaced (a reload, a component
//! listed again), the series of tools and prompts no longer loaded are
//! forgotten ([`forget_names`]), so a component that renames its tools
//! does not grow the metrics without end.
//!
//! The metrics exist only when they are served: [`install`] is called once,
//! at start-up, with `--metrics-listen`. Until then every recording function
//! here is one check of an empty [`OnceLock`] and nothing else, so a server
//! without metrics pays (nearly) nothing for them.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::TypedMetric;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Unit;

/// Upper bounds of `mcp_server_operation_duration_seconds`, in seconds: the
/// conventions' recommended boundaries, with finer ones below 10 ms added
/// (most of Airlock's operations take less).
const OPERATION_BUCKETS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
    10.0, 30.0, 60.0, 120.0, 300.0,
];

/// Upper bounds of `airlock_instantiate_duration_seconds`: a fresh instance
/// takes microseconds with the pooling allocator.
const INSTANTIATE_BUCKETS: &[f64] = &[
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1.0,
];

/// Upper bounds of `airlock_mrtr_rounds` (rounds a completed request took;
/// `--max-rounds` is 32 by default).
const ROUND_BUCKETS: &[f64] = &[1.0, 2.0, 3.0, 4.0, 5.0, 8.0, 16.0, 32.0];

/// The value of a label whose real value is not in its bounded set.
const OTHER: &str = "_OTHER";

/// The labels of one MCP operation, as the conventions name them.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabels {
    /// The JSON-RPC method, or `_OTHER`.
    mcp_method_name: &'static str,
    /// The tool of a `tools/call`, when it is loaded.
    gen_ai_tool_name: Option<String>,
    /// The prompt of a `prompts/get`, when it is loaded.
    gen_ai_prompt_name: Option<String>,
    /// Empty on success; the JSON-RPC code of an error (or `_OTHER`), or
    /// `tool_error` for a `tools/call` result with `isError`.
    error_type: Option<String>,
    /// The protocol version the request declared, when Airlock supports it.
    mcp_protocol_version: Option<&'static str>,
    /// How the request ended, as the server classified it (Airlock's own
    /// attribute): only `failed` is a failure of the tool (or prompt, or
    /// resource); a refusal, unknown name or quota is not.
    airlock_outcome: &'static str,
}

impl OperationLabels {
    /// The labels of `operation`.
    fn of(operation: &Operation<'_>) -> OperationLabels {
        OperationLabels {
            mcp_method_name: operation.method.unwrap_or(OTHER),
            gen_ai_tool_name: operation.tool.map(str::to_owned),
            gen_ai_prompt_name: operation.prompt.map(str::to_owned),
            error_type: operation.error.map(|error| match error {
                ErrorType::Code(code) => code.to_string(),
                ErrorType::Other => OTHER.to_owned(),
                ErrorType::Tool => "tool_error".to_owned(),
            }),
            mcp_protocol_version: operation.version,
            airlock_outcome: operation.outcome,
        }
    }

    /// Whether `keep` keeps the tool and prompt these labels name, if any.
    fn names_kept(&self, keep: impl Fn(Name<'_>) -> bool) -> bool {
        self.gen_ai_tool_name
            .as_deref()
            .is_none_or(|tool| keep(Name::Tool(tool)))
            && self
                .gen_ai_prompt_name
                .as_deref()
                .is_none_or(|prompt| keep(Name::Prompt(prompt)))
    }
}

/// One answered MCP request, as its caller classified it: every value
/// comes from a bounded set (what Airlock serves and answers with), never
/// from what a client made up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation<'a> {
    /// A method Airlock serves; `None` for any other (`_OTHER`).
    pub method: Option<&'static str>,
    /// The tool of a `tools/call`, when it is loaded.
    pub tool: Option<&'a str>,
    /// The prompt of a `prompts/get`, when it is loaded.
    pub prompt: Option<&'a str>,
    /// How it failed, if it did, in the conventions' terms.
    pub error: Option<ErrorType>,
    /// The protocol version it declared, when Airlock supports it.
    pub version: Option<&'static str>,
    /// How it ended, as the server classified its answer (a fixed word:
    /// `ok`, `failed`, `denied`, …).
    pub outcome: &'static str,
}

/// How an operation failed: its `error_type` label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorType {
    /// A JSON-RPC error with a code Airlock answers with.
    Code(i32),
    /// A JSON-RPC error with another code (a component's own): `_OTHER`.
    Other,
    /// A `tools/call` result that says `isError`: `tool_error`.
    Tool,
}

/// A name that is a label value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name<'a> {
    /// A tool's.
    Tool(&'a str),
    /// A prompt's.
    Prompt(&'a str),
}

/// `mcp_server_operation_duration_seconds`: a histogram per label set,
/// like a `Family`, but whose series can be forgotten by their labels
/// (a `Family` removes only a label set named in full).
#[derive(Debug, Default)]
struct Operations {
    series: RwLock<HashMap<OperationLabels, Histogram>>,
}

impl Operations {
    /// The family's name, without its unit.
    const NAME: &str = "mcp_server_operation_duration";
    /// Its help text.
    const HELP: &str =
        "Duration of MCP requests, by method, tool or prompt, error, protocol version and outcome";

    /// Counts an operation of `labels` that took `seconds`.
    fn observe(&self, labels: OperationLabels, seconds: f64) {
        let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(histogram) = series.get(&labels) {
            histogram.observe(seconds);
            return;
        }
        drop(series);
        self.series
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(labels)
            .or_insert_with(|| Histogram::new(OPERATION_BUCKETS.iter().copied()))
            .observe(seconds);
    }

    /// Forgets the series whose labels `keep` refuses.
    fn retain(&self, keep: impl Fn(&OperationLabels) -> bool) {
        self.series
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|labels, _| keep(labels));
    }
}

impl Collector for Operations {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let series = self.series.read().unwrap_or_else(PoisonError::into_inner);
        let mut metric = encoder.encode_descriptor(
            Self::NAME,
            Self::HELP,
            Some(&Unit::Seconds),
            Histogram::TYPE,
        )?;
        for (labels, histogram) in series.iter() {
            histogram.encode(metric.encode_family(labels)?)?;
        }
        Ok(())
    }
}

/// A label set of one bounded label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

/// A label set of one bounded label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

/// A label set of one bounded label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

/// A label set of one bounded label.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DependencyLabel {
    dependency: &'static str,
}

/// A limit a call ran into, or a quota a request was refused by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// Its wall-clock deadline.
    Deadline,
    /// Its memory cap.
    Memory,
    /// Its fuel.
    Fuel,
    /// Its output limit (bytes, or items of one kind).
    Output,
    /// The host resources one instance may hold.
    Resources,
    /// A principal's rate limit (`--rate-limit`): the request was refused.
    Rate,
    /// A tool's rate limit (its manifest's): the call was refused.
    ToolRate,
    /// The sessions one principal may have open: `initialize` was refused.
    SessionsPerPrincipal,
    /// The active tasks one principal may have: a task was refused.
    TasksPerPrincipal,
    /// The tasks or bytes the task store may hold: a task was refused, or
    /// failed as it grew.
    TaskStore,
}

impl Limit {
    /// The label value.
    fn label(self) -> &'static str {
        match self {
            Limit::Deadline => "deadline",
            Limit::Memory => "memory",
            Limit::Fuel => "fuel",
            Limit::Output => "output",
            Limit::Resources => "resources",
            Limit::Rate => "rate",
            Limit::ToolRate => "tool_rate",
            Limit::SessionsPerPrincipal => "sessions_per_principal",
            Limit::TasksPerPrincipal => "tasks_per_principal",
            Limit::TaskStore => "task_store",
        }
    }
}

/// A gauge whose value is read when the metrics are scraped (from the
/// runtime or the registry), so that nothing on the request path keeps it.
pub struct SampledGauge {
    /// The metric's name.
    pub name: &'static str,
    /// Its help text.
    pub help: &'static str,
    /// Reads its value now.
    pub read: Box<dyn Fn() -> i64 + Send + Sync>,
}

impl std::fmt::Debug for SampledGauge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SampledGauge")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// The [`SampledGauge`]s, read at each scrape.
#[derive(Debug)]
struct Sampled(Vec<SampledGauge>);

impl Collector for Sampled {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        for gauge in &self.0 {
            let value = ConstGauge::new((gauge.read)());
            let metric =
                encoder.encode_descriptor(gauge.name, gauge.help, None, value.metric_type())?;
            value.encode(metric)?;
        }
        Ok(())
    }
}

/// Every metric Airlock keeps, and the registry that renders them.
#[derive(Debug)]
pub struct Metrics {
    registry: prometheus_client::registry::Registry,
    operations: Arc<Operations>,
    instantiate: Histogram,
    refused_busy: Counter,
    limit_hits: Family<KindLabel, Counter>,
    access_refused: Family<KindLabel, Counter>,
    state_refused: Family<ReasonLabel, Counter>,
    mrtr_rounds: Histogram,
    reload_errors: Counter,
    audit_dropped: Counter,
    sessions_open: Gauge,
    bridged_waiting: Gauge,
    tasks_created: Counter,
    task_rounds: Family<OutcomeLabel, Counter>,
    dependencies_up: Family<DependencyLabel, Gauge>,
}

impl Metrics {
    /// Every family, registered, plus `sampled` gauges read at each scrape.
    pub fn new(sampled: Vec<SampledGauge>) -> Metrics {
        let metrics = Metrics {
            registry: prometheus_client::registry::Registry::default(),
            operations: Arc::default(),
            instantiate: Histogram::new(INSTANTIATE_BUCKETS.iter().copied()),
            refused_busy: Counter::default(),
            limit_hits: Family::default(),
            access_refused: Family::default(),
            state_refused: Family::default(),
            mrtr_rounds: Histogram::new(ROUND_BUCKETS.iter().copied()),
            reload_errors: Counter::default(),
            audit_dropped: Counter::default(),
            sessions_open: Gauge::default(),
            bridged_waiting: Gauge::default(),
            tasks_created: Counter::default(),
            task_rounds: Family::default(),
            dependencies_up: Family::default(),
        };
        metrics.register(sampled)
    }

    fn register(mut self, sampled: Vec<SampledGauge>) -> Metrics {
        let r = &mut self.registry;
        r.register_collector(Box::new(self.operations.clone()));
        r.register_with_unit(
            "airlock_instantiate_duration",
            "Time to make a fresh instance of a component for one call",
            Unit::Seconds,
            self.instantiate.clone(),
        );
        r.register(
            "airlock_calls_refused_busy",
            "Calls refused at once because every slot was taken and the queue was full",
            self.refused_busy.clone(),
        );
        r.register(
            "airlock_limit_hits",
            "Calls that failed on one of their limits, and requests refused by a quota, by kind",
            self.limit_hits.clone(),
        );
        r.register(
            "airlock_access_refused",
            "Requests refused by an access rule, by the kind of item they named (tool, prompt, resource, task)",
            self.access_refused.clone(),
        );
        r.register(
            "airlock_state_refused",
            "requestState tokens that did not open (or could not be sealed), by reason",
            self.state_refused.clone(),
        );
        r.register(
            "airlock_mrtr_rounds",
            "Rounds that multi-round requests took, counted when they complete",
            self.mrtr_rounds.clone(),
        );
        r.register(
            "airlock_reload_errors",
            "Reloads of the tools directory refused (the previous set kept serving)",
            self.reload_errors.clone(),
        );
        r.register(
            "airlock_audit_dropped",
            "Audit records lost because the audit queue was full or the trail could not be written (a gap record in the trail says so)",
            self.audit_dropped.clone(),
        );
        r.register(
            "airlock_sessions_open",
            "HTTP sessions of 2025-era clients open now",
            self.sessions_open.clone(),
        );
        r.register(
            "airlock_bridged_requests_waiting",
            "Requests sent to 2025-era clients for a tool's input, waiting for their answer",
            self.bridged_waiting.clone(),
        );
        r.register(
            "airlock_tasks_created",
            "Tasks created",
            self.tasks_created.clone(),
        );
        r.register(
            "airlock_task_rounds",
            "Rounds of tasks run on this host, by how they ended",
            self.task_rounds.clone(),
        );
        r.register(
            "airlock_dependency_up",
            "Whether a shared dependency answered when last asked (1) or not (0), by dependency",
            self.dependencies_up.clone(),
        );
        r.register_collector(Box::new(Sampled(sampled)));
        self
    }

    /// The metrics in the OpenMetrics text format.
    pub fn render(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .expect("writing to a String does not fail");
        text
    }

    /// Counts one answered request that started at `started`.
    fn operation(&self, labels: OperationLabels, started: Instant) {
        self.operations
            .observe(labels, started.elapsed().as_secs_f64());
    }
}

static INSTALLED: OnceLock<Metrics> = OnceLock::new();

/// Makes `metrics` the process's metrics, recorded from now on. Only the
/// first call installs anything; returns the installed metrics.
pub fn install(metrics: Metrics) -> &'static Metrics {
    INSTALLED.get_or_init(|| metrics)
}

/// The process's metrics, if they are kept.
fn installed() -> Option<&'static Metrics> {
    INSTALLED.get()
}

/// Now, if metrics are kept: the start of something to time.
pub fn started() -> Option<Instant> {
    installed().map(|_| Instant::now())
}

/// Counts one answered MCP request that started at `started` (from
/// [`started`]).
pub fn operation(started: Instant, operation: Operation<'_>) {
    if let Some(metrics) = installed() {
        metrics.operation(OperationLabels::of(&operation), started);
    }
}

/// What is served changed: forgets the series naming a tool or prompt that
/// `keep` does not keep (no longer loaded). Since only names loaded when a
/// request is answered become labels, the named series are those of what
/// is loaded now, plus at most one per request answered across the change
/// (which the next change forgets if its name is gone).
pub fn forget_names(keep: impl Fn(Name<'_>) -> bool) {
    if let Some(metrics) = installed() {
        metrics.operations.retain(|labels| labels.names_kept(&keep));
    }
}

/// Counts a call refused at once because every slot was taken and the
/// queue was full.
pub fn refused_busy() {
    if let Some(metrics) = installed() {
        metrics.refused_busy.inc();
    }
}

/// Counts a call that ran into `limit`.
pub fn limit_hit(limit: Limit) {
    if let Some(metrics) = installed() {
        metrics
            .limit_hits
            .get_or_create(&KindLabel {
                kind: limit.label(),
            })
            .inc();
    }
}

/// Counts a request refused by an access rule; `kind`: what it named
/// (`tool`, `prompt`, `resource`, `task`).
pub fn access_refused(kind: &'static str) {
    if let Some(metrics) = installed() {
        metrics
            .access_refused
            .get_or_create(&KindLabel { kind })
            .inc();
    }
}

/// Times one instantiation that started at `started` (from [`started`]).
pub fn instantiated(started: Option<Instant>) {
    if let (Some(metrics), Some(started)) = (installed(), started) {
        metrics.instantiate.observe(started.elapsed().as_secs_f64());
    }
}

/// Counts a requestState that did not open, or could not be sealed, for
/// `reason` (a fixed word naming the check, never its details).
pub fn state_refused(reason: &'static str) {
    if let Some(metrics) = installed() {
        metrics
            .state_refused
            .get_or_create(&ReasonLabel { reason })
            .inc();
    }
}

/// Counts a multi-round request that completed in its round `round`.
pub fn request_completed(round: u32) {
    if let Some(metrics) = installed() {
        metrics.mrtr_rounds.observe(f64::from(round));
    }
}

/// Counts a refused reload of the tools directory.
pub fn reload_refused() {
    if let Some(metrics) = installed() {
        metrics.reload_errors.inc();
    }
}

/// Counts audit records lost to a full queue.
pub fn audit_dropped(records: u64) {
    if let Some(metrics) = installed() {
        metrics.audit_dropped.inc_by(records);
    }
}

/// Sets how many 2025-era sessions are open.
pub fn sessions_open(open: usize) {
    if let Some(metrics) = installed() {
        metrics
            .sessions_open
            .set(i64::try_from(open).unwrap_or(i64::MAX));
    }
}

/// One request to a 2025-era client waiting for its answer, counted in
/// `airlock_bridged_requests_waiting` until dropped.
#[derive(Debug)]
pub struct Waiting(&'static Metrics);

impl Drop for Waiting {
    fn drop(&mut self) {
        self.0.bridged_waiting.dec();
    }
}

/// Counts a bridged request waiting, until the returned guard is dropped.
pub fn bridged_request_waiting() -> Option<Waiting> {
    installed().map(|metrics| {
        metrics.bridged_waiting.inc();
        Waiting(metrics)
    })
}

/// Counts a task created.
pub fn task_created() {
    if let Some(metrics) = installed() {
        metrics.tasks_created.inc();
    }
}

/// Records whether `dependency` (a fixed word: `task_store`) answered when
/// last asked.
pub fn dependency_up(dependency: &'static str, up: bool) {
    if let Some(metrics) = installed() {
        metrics
            .dependencies_up
            .get_or_create(&DependencyLabel { dependency })
            .set(i64::from(up));
    }
}

/// Counts a round of a task that ended with `outcome` (a fixed word).
pub fn task_round(outcome: &'static str) {
    if let Some(metrics) = installed() {
        metrics
            .task_rounds
            .get_or_create(&OutcomeLabel { outcome })
            .inc();
    }
}

#[cfg(test)]
mod tests;
