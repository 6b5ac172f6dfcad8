//! The options of `airlock serve`, and the [`ServeConfig`] they make.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::access::AccessOptions;
use super::audit::AuditOptions;
use super::card::CardOptions;
use super::connections::ConnectionOptions;
use super::legacy::LegacyOptions;
use super::metrics::MetricsOptions;
use super::quotas::QuotaOptions;
use super::sandbox::{SandboxOptions, saturate};
use super::supply::SupplyOptions;
use super::tasks::TaskOptions;
use super::telemetry::TraceOptions;
use super::values;
use crate::logging::LogFormat;
use crate::protocol::ProtocolSettings;
use crate::registry::{
    self,
    input_schema::{HeavyChecks, ViolationLimits},
};
use crate::runtime::RuntimeLimits;
use crate::sealing::DEFAULT_REDEMPTION_CAPACITY;
use crate::serve::{ServeConfig, SingleUseStore, TaskStoreChoice, Transport};

/// The heading of the options about calls and their rounds.
const CALLS: &str = "Calls";
/// The heading of the options about requestState.
const STATE: &str = "Request state";

/// Options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Serving")]
pub struct ServeOptions {
    /// TOML file of settings: its keys are these options' long names, e.g. `call-timeout = "10s"`
    /// or `allowed-host = ["a", "b"]`; options and environment variables override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory of tool components (`*.wasm`); one named here must exist [default: tools; with
    /// --components, only if it exists].
    #[arg(long, value_name = "DIR")]
    pub tools: Option<PathBuf>,
    /// Address to serve Streamable HTTP on; the endpoint is `/mcp`. Port 0 picks a free port.
    #[arg(long, value_name = "ADDRESS", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Serve MCP on stdin/stdout instead of HTTP (logs stay on stderr).
    #[arg(long)]
    pub stdio: bool,
    /// Check the settings instead of serving: read them and the key, token and access files,
    /// load every component, log what would be served, and exit: 0 when everything loaded, 1
    /// on the first error, a skipped component, or an `AIRLOCK_*` environment variable that
    /// names no option. A check writes nothing: not the audit trail, the task store, the pull
    /// cache or (without --fill-cache) the compile cache.
    #[arg(long)]
    pub check: bool,
    /// With --check: use the compile cache as serving does (read it, and write into it the
    /// components compiled), so the server started next loads them without compiling. Without
    /// it, a check compiles every component in memory and writes nothing anywhere.
    #[arg(long, requires = "check")]
    pub fill_cache: bool,
    /// Format of the server log on stderr: `text`, or `json` (one object per line with level,
    /// target, message, fields, and the trace_id and request_id of the request it belongs to).
    #[arg(long, value_name = "FORMAT", default_value = "text", value_enum)]
    pub log_format: LogFormat,
    /// Directory for compiled components [default: $XDG_CACHE_HOME/airlock or ~/.cache/airlock].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every component at start instead of using the on-disk cache.
    #[arg(long)]
    pub no_cache: bool,
    /// How often to look for added, replaced or removed components in the tools directory; `off`
    /// never reloads.
    #[arg(long, value_name = "DURATION", default_value = "500ms", value_parser = values::interval)]
    pub reload_interval: Duration,
    /// Least time between two listings of one component that reports its lists changed; the
    /// reports that come meanwhile are answered by one listing.
    #[arg(long, value_name = "DURATION", default_value = "1s",
          value_parser = values::duration(Duration::ZERO))]
    pub relist_interval: Duration,
    /// How long a request that needs the components (a list, a call, a read…) waits for their
    /// first load after the start; past it, it is refused with a retryable error (HTTP 503,
    /// Retry-After). Discovery and the health probes answer at once.
    #[arg(long, value_name = "DURATION", default_value = "30s",
          value_parser = values::duration(Duration::ZERO))]
    pub load_wait: Duration,

    /// Threads that serve requests and run guests [default: one per CPU this process may use].
    /// Fewer leave cores to other processes on the machine; where those are busy (the clients,
    /// other services), fewer threads than CPUs can serve more (docs/operations.md, "Worker
    /// threads").
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub worker_threads: Option<u16>,

    /// Sandbox defaults and the sources of what manifests grant.
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    /// Components pulled by OCI reference.
    #[command(flatten)]
    pub supply: SupplyOptions,

    /// Most tool instances running at once; further calls wait for a free slot.
    #[arg(long, value_name = "N", default_value_t = 256, help_heading = CALLS,
          value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_concurrent_calls: u64,
    /// Most calls waiting for a free slot when all are taken; a call beyond that fails at once
    /// with a "server busy" error (HTTP 503). 0: calls never wait.
    #[arg(long, value_name = "N", default_value_t = 1024, help_heading = CALLS,
          value_parser = clap::value_parser!(u64).range(0..=1_000_000))]
    pub max_queued_calls: u64,
    /// Largest request body (or stdio line) accepted.
    #[arg(long, value_name = "SIZE", default_value = "4MiB", help_heading = CALLS,
          value_parser = values::size(1 << 10, u64::MAX))]
    pub max_body: u64,
    /// Most rounds one multi-round call may take.
    #[arg(long, value_name = "N", default_value_t = 32, help_heading = CALLS,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,
    /// Most schema violations named in the result of a call refused for its arguments.
    #[arg(long, value_name = "N", default_value_t = 5, help_heading = CALLS,
          value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub max_named_violations: u64,
    /// Most bytes of the violations named in the result of a call refused for its arguments.
    #[arg(long, value_name = "SIZE", default_value = "1KiB", help_heading = CALLS,
          value_parser = values::size(64, 1 << 20))]
    pub max_violation_bytes: u64,
    /// Most checks of heavy arguments (over 16 KiB) against their tool's input schema running at
    /// once, each on a thread of its own so that the threads serving requests stay free; further
    /// ones wait for their turn.
    #[arg(long, value_name = "N", default_value_t = 1, help_heading = CALLS,
          value_parser = clap::value_parser!(u64).range(1..=1024))]
    pub max_concurrent_checks: u64,

    /// How long a requestState stays valid.
    #[arg(long, value_name = "DURATION", default_value = "10m", help_heading = STATE,
          value_parser = values::duration(Duration::from_secs(1)))]
    pub state_ttl: Duration,
    /// File of state keys, one per line (the first seals, all open). Without it, the keys in
    /// AIRLOCK_STATE_KEYS, or else a random key of this process.
    #[arg(long, value_name = "FILE", help_heading = STATE)]
    pub state_keys_file: Option<PathBuf>,
    /// Make each requestState redeemable once: a replayed token is refused. Off by default: a
    /// client that loses the answer to a round (network failure) cannot retry it and must restart
    /// the request. Ids are remembered in this process only, unless --single-use-store is given.
    #[arg(long, help_heading = STATE)]
    pub single_use_state: bool,
    /// Record redeemed requestState ids in Redis at this URL (`redis://HOST:PORT/DB`; `rediss://`
    /// for TLS; `redis://:PASSWORD@HOST:PORT/DB` or `USER:PASSWORD@` to authenticate), shared by
    /// every process of a fleet that names it, so a token opened on one is refused on all. Implies
    /// --single-use-state. While Redis cannot be reached, retried rounds are refused.
    #[arg(long, value_name = "URL", help_heading = STATE, value_parser = single_use_store,
          conflicts_with = "single_use_capacity")]
    pub single_use_store: Option<String>,
    /// Most redeemed requestState ids remembered at once with --single-use-state (they are
    /// forgotten when their token expires); when full, retried rounds are refused until some
    /// expire.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_REDEMPTION_CAPACITY as u64,
          help_heading = STATE, requires = "single_use_state",
          value_parser = clap::value_parser!(u64).range(1..))]
    pub single_use_capacity: u64,

    /// Tokens, JWT access tokens, OAuth metadata, and the Host/Origin allow-list.
    #[command(flatten)]
    pub access: AccessOptions,
    /// HTTP connection timeouts and cap.
    #[command(flatten)]
    pub connections: ConnectionOptions,
    /// Sessions of 2025-era clients (`initialize`) and the bridge that serves them.
    #[command(flatten)]
    pub legacy: LegacyOptions,
    /// Tasks: their store, lifetime and limits.
    #[command(flatten)]
    pub tasks: TaskOptions,
    /// Each caller's request rate and sessions.
    #[command(flatten)]
    pub quotas: QuotaOptions,
    /// Prometheus metrics.
    #[command(flatten)]
    pub metrics: MetricsOptions,
    /// Traces over OTLP.
    #[command(flatten)]
    pub traces: TraceOptions,
    /// The audit trail.
    #[command(flatten)]
    pub audit: AuditOptions,
    /// What the server card says.
    #[command(flatten)]
    pub card: CardOptions,
}

impl ServeOptions {
    /// The settings of the server, defaults applied.
    pub fn into_config(self) -> ServeConfig {
        let transport = if self.stdio {
            Transport::Stdio
        } else {
            Transport::Http(self.listen)
        };
        let cache_dir = if self.no_cache || (self.check && !self.fill_cache) {
            None
        } else {
            self.cache_dir.or_else(registry::default_cache_dir)
        };
        let task_store = self.tasks.task_store.clone().unwrap_or_else(|| {
            cache_dir.as_ref().map_or(TaskStoreChoice::Memory, |dir| {
                TaskStoreChoice::DefaultFile(dir.join("tasks.redb"))
            })
        });
        let limits = RuntimeLimits {
            max_concurrent_calls: saturate(self.max_concurrent_calls),
            max_queued_calls: saturate(self.max_queued_calls),
            ..RuntimeLimits::default()
        };
        let pulls = self.supply.components.is_some();
        ServeConfig {
            tools: tools_dir(self.tools, pulls),
            supply: self.supply.settings(self.sandbox.max_component_size),
            check: self.check,
            worker_threads: self.worker_threads.map(usize::from),
            transport,
            cache_dir,
            reload_every: (!self.reload_interval.is_zero()).then_some(self.reload_interval),
            relist_every: self.relist_interval,
            load_wait: self.load_wait,
            sandbox: self.sandbox.settings(limits),
            protocol: ProtocolSettings {
                max_rounds: self.max_rounds,
                violations: ViolationLimits {
                    named: saturate(self.max_named_violations),
                    bytes: saturate(self.max_violation_bytes),
                },
                heavy_checks: HeavyChecks::new(saturate(self.max_concurrent_checks)),
                ..ProtocolSettings::default()
            },
            bridge: self.legacy.bridge(),
            max_body_bytes: saturate(self.max_body),
            state_ttl: self.state_ttl,
            single_use: match self.single_use_store {
                Some(url) => Some(SingleUseStore::Redis(url)),
                None => self.single_use_state.then(|| SingleUseStore::Memory {
                    capacity: saturate(self.single_use_capacity),
                }),
            },
            state_keys_file: self.state_keys_file,
            tokens_file: self.access.tokens_file.clone(),
            auth: self.access.auth(),
            card: self.card.settings(self.access.oauth_resource.as_deref()),
            access_policy: self.access.access_policy.clone(),
            allowed_hosts: self.access.allowed_hosts,
            allowed_origins: self.access.allowed_origins,
            connections: self.connections.limits(),
            max_sessions: self.legacy.max_sessions as usize,
            max_sessions_per_principal: self.quotas.max_sessions_per_principal(),
            rate_limit: self.quotas.rate_limit(),
            session_idle_timeout: self.legacy.session_idle_timeout,
            task_store,
            tasks: self.tasks.settings(),
            metrics: self.metrics.listen(),
            traces: self.traces.settings(),
            audit: self.audit.settings(),
        }
    }
}

/// The tools directory when none is given.
const DEFAULT_TOOLS_DIR: &str = "tools";

/// The tools directory: the one `given`, else [`DEFAULT_TOOLS_DIR`], except
/// when that does not exist and the components are pulled (`pulls`): then
/// none, and only the pulled components are served.
fn tools_dir(given: Option<PathBuf>, pulls: bool) -> Option<PathBuf> {
    given.or_else(|| {
        let default = PathBuf::from(DEFAULT_TOOLS_DIR);
        (!pulls || default.exists()).then_some(default)
    })
}

/// A `redis://` or `rediss://` URL.
fn single_use_store(text: &str) -> Result<String, String> {
    if text.starts_with("redis://") || text.starts_with("rediss://") {
        Ok(text.to_owned())
    } else {
        Err(
            "the single-use store must be a redis://HOST:PORT/DB or rediss://HOST:PORT/DB URL"
                .to_owned(),
        )
    }
}
