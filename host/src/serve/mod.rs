//! `airlock serve`: the settings of a server and the start-up sequence
//! (keys, tokens, runtime, tools directory, transport). The command line
//! that fills in the settings is [`crate::cli`].

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::Router;

use crate::access::ServerRules;
use crate::audit::{self, AuditSettings};
use crate::auth::{AuthSettings, Authenticator};
use crate::endpoint::Endpoint;
use crate::legacy::{BridgeSettings, Legacy, Sessions};
use crate::live::{self, LiveOptions};
use crate::policy::ProtectedPaths;
use crate::protocol::{AccessSettings, ProtocolSettings, Server};
use crate::quotas::{Quotas, RateLimit};
use crate::registry::pulled_files::PulledFiles;
use crate::registry::{Registry, ToolSources};
use crate::sandbox::SandboxSettings;
use crate::sealing::{
    InMemoryRedemptions, KeyRing, RedemptionStore, RedisRedemptions, StateLimits, StateSealer,
};
use crate::supply::Staged;
use crate::tasks::{EmbeddedStore, MemoryStore, RedisStore, TaskSettings, TaskStore, Tasks};
use crate::telemetry::{self, TraceSettings};
use crate::transport::http::ConnectionLimits;
use crate::transport::{http, stdio};

mod check;
pub mod metrics;

pub use crate::sealing::STATE_KEYS_ENV;

/// Where MCP is served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP at `/mcp` on this address (port 0 picks a free port).
    Http(SocketAddr),
    /// stdin and stdout of this process (logs stay on stderr).
    Stdio,
}

/// Everything `airlock serve` needs, checked and with defaults applied.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Directory of tool components (`*.wasm`); `None`: none, only the
    /// components of `supply` are served.
    pub tools: Option<PathBuf>,
    /// Components pulled by OCI reference, served beside the directory's.
    pub supply: Option<crate::supply::SupplySettings>,
    /// Only check: load everything, report, and return instead of serving
    /// (see [`check`]).
    pub check: bool,
    /// Threads of the runtime that serves requests and runs guests; `None`:
    /// one per CPU. Read by whoever builds that runtime (`airlock serve`).
    pub worker_threads: Option<usize>,
    /// Where MCP is served.
    pub transport: Transport,
    /// Directory for compiled components; `None` compiles every component
    /// at start.
    pub cache_dir: Option<PathBuf>,
    /// How often to look for added, replaced or removed components; `None`
    /// never reloads.
    pub reload_every: Option<Duration>,
    /// Least time between two relists of one component.
    pub relist_every: Duration,
    /// How long a request that needs the components waits for their first
    /// load before it is refused as retryable (HTTP 503).
    pub load_wait: Duration,
    /// The server's limits and the secrets manifests may grant.
    pub sandbox: SandboxSettings,
    /// Rounds of multi-round calls, lists and reads.
    pub protocol: ProtocolSettings,
    /// The bridge that serves 2025-era sessions.
    pub bridge: BridgeSettings,
    /// Largest request body (or stdio line), in bytes.
    pub max_body_bytes: usize,
    /// How long a requestState stays valid.
    pub state_ttl: Duration,
    /// With `Some`, each requestState opens once; the record of the
    /// redeemed ones is kept there.
    pub single_use: Option<SingleUseStore>,
    /// File of state keys, one per line; without it, [`STATE_KEYS_ENV`] or
    /// a random key of this process.
    pub state_keys_file: Option<PathBuf>,
    /// File of bearer tokens, one `<token> <name>` per line.
    pub tokens_file: Option<PathBuf>,
    /// JWT access tokens and OAuth protected-resource metadata.
    pub auth: AuthSettings,
    /// What the server card says (see [`http::server_card`]).
    pub card: http::CardSettings,
    /// The server's access policy file (see [`crate::access`]).
    pub access_policy: Option<PathBuf>,
    /// Host names accepted in `Host` and `Origin` besides
    /// [`http::LOCAL_HOSTS`].
    pub allowed_hosts: Vec<String>,
    /// Exact origins accepted in `Origin` besides the allowed hosts'.
    pub allowed_origins: Vec<String>,
    /// HTTP connection timeouts and cap.
    pub connections: ConnectionLimits,
    /// Most HTTP sessions of 2025-era clients open at once.
    pub max_sessions: usize,
    /// Most of those one principal may have open; `None`: no limit of its
    /// own.
    pub max_sessions_per_principal: Option<usize>,
    /// The rate limit on each principal's requests; `None`: none.
    pub rate_limit: Option<RateLimit>,
    /// How long such a session may stay idle before it ends.
    pub session_idle_timeout: Duration,
    /// Where tasks are kept.
    pub task_store: TaskStoreChoice,
    /// Tasks' lifetime and limits.
    pub tasks: TaskSettings,
    /// Where Prometheus metrics are served; `None` keeps none.
    pub metrics: Option<metrics::MetricsListen>,
    /// Where spans are exported; `None` makes none.
    pub traces: Option<TraceSettings>,
    /// The audit trail; `None` keeps none.
    pub audit: Option<AuditSettings>,
}

/// Where tasks are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskStoreChoice {
    /// In this process's memory: tasks end with it.
    Memory,
    /// In this file (created if missing).
    File(PathBuf),
    /// In the default file under the cache directory; if another process
    /// holds it, in memory (with a warning).
    DefaultFile(PathBuf),
    /// In Redis at this URL, shared by every host that names it.
    Redis(String),
}

impl TaskStoreChoice {
    /// Opens (or connects to) the store.
    async fn open(&self) -> anyhow::Result<Arc<dyn TaskStore>> {
        Ok(match self {
            TaskStoreChoice::Memory => Arc::new(MemoryStore::default()),
            TaskStoreChoice::File(path) => Arc::new(
                EmbeddedStore::open(path)
                    .with_context(|| format!("cannot open the task store {}", path.display()))?,
            ),
            TaskStoreChoice::DefaultFile(path) => match EmbeddedStore::open(path) {
                Ok(store) => Arc::new(store),
                Err(error) => {
                    tracing::warn!(file = %path.display(), %error, "cannot use the default task store; keeping tasks in memory (they end with this process). Give each process its own --task-store, or share one with redis://");
                    Arc::new(MemoryStore::default())
                }
            },
            TaskStoreChoice::Redis(url) => Arc::new(
                RedisStore::connect(url)
                    .await
                    .context("cannot connect to the task store")?,
            ),
        })
    }
}

/// Where single-use mode records the redeemed requestState ids.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SingleUseStore {
    /// In this process's memory, at most `capacity` ids at once: replays
    /// sent to another process are not refused.
    Memory {
        /// The most ids remembered at once.
        capacity: usize,
    },
    /// In Redis at this URL, shared by every host that names it.
    Redis(String),
}

impl SingleUseStore {
    /// Opens (or connects to) the record, and logs which one is used.
    async fn open(&self) -> anyhow::Result<Arc<dyn RedemptionStore>> {
        Ok(match self {
            SingleUseStore::Memory { capacity } => {
                tracing::info!(
                    capacity,
                    "single-use requestState: each token opens once; used ids are remembered in this \
                     process only, so behind a load balancer a replay to another process is not refused \
                     (share them with --single-use-store redis://...)"
                );
                Arc::new(InMemoryRedemptions::new(*capacity))
            }
            SingleUseStore::Redis(url) => {
                let store = RedisRedemptions::connect(url)
                    .await
                    .context("cannot connect to the single-use store")?;
                tracing::info!(
                    store = store.describe(),
                    "single-use requestState: each token opens once across every process sharing \
                     this Redis; while it cannot be reached, retried rounds are refused (fail closed)"
                );
                Arc::new(store)
            }
        })
    }
}

/// Airlock's own files, kept out of every grant: the tools directory and
/// the compile cache (not writable), and every file of keys, tokens or
/// secrets, and the audit trail (not readable).
fn protected_paths(config: &ServeConfig) -> ProtectedPaths {
    let mut protected = ProtectedPaths::default();
    if let Some(tools) = &config.tools {
        protected = protected.no_write(tools);
    }
    if let Some(supply) = &config.supply {
        protected = protected.no_write(&supply.cache_dir);
    }
    if let Some(cache_dir) = &config.cache_dir {
        protected = protected.no_write(cache_dir);
    }
    let auth = &config.auth;
    let secret_files = config
        .state_keys_file
        .iter()
        .chain(&config.tokens_file)
        .chain(&auth.jwt_key_files)
        .chain(&auth.jwt_hs256_secret_file)
        .chain(config.audit.iter().flat_map(|audit| &audit.key_file))
        .chain(config.audit.iter().filter_map(|audit| audit.writer.file()))
        .chain(
            config
                .audit
                .iter()
                .filter_map(|audit| audit.writer.witness.as_ref().map(|witness| witness.path())),
        );
    secret_files.fold(protected, |protected, file| protected.no_access(file))
}

/// Where the components come from, for messages: the tools directory, or
/// the components file when there is none.
fn components_origin(config: &ServeConfig) -> &Path {
    match (&config.tools, &config.supply) {
        (Some(dir), _) => dir,
        (None, Some(supply)) => &supply.components,
        (None, None) => Path::new(""),
    }
}

/// Descriptors kept for Airlock itself (connections, the tools directory,
/// the cache) beyond what guests may hold.
const OWN_DESCRIPTORS: u64 = 4096;

/// Raises the open-file limit to its maximum, and warns when guests could
/// still use up the descriptors the server needs: every instance may hold
/// `--max-host-resources` resources, and files and outbound connections
/// among them are descriptors.
fn raise_open_file_limit(limits: &crate::runtime::RuntimeLimits) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let raised = match (limit.current, limit.maximum) {
        (Some(current), maximum) if maximum.is_none_or(|max| max > current) => {
            let wanted = Rlimit {
                current: maximum,
                maximum,
            };
            setrlimit(Resource::Nofile, wanted).map_or(Some(current), |()| maximum)
        }
        (current, _) => current,
    };
    let guests =
        (limits.max_host_resources as u64).saturating_mul(limits.max_concurrent_calls as u64);
    if let Some(available) = raised
        && available < guests.saturating_add(OWN_DESCRIPTORS)
    {
        tracing::warn!(
            open_file_limit = available,
            "guests may hold up to {guests} descriptors (--max-host-resources x --max-concurrent-calls), \
             more than the open-file limit leaves beside Airlock's own {OWN_DESCRIPTORS}: raise the limit \
             (ulimit -n, LimitNOFILE) or lower those options, or guests can starve new connections"
        );
    }
}

/// Where the state keys come from; without any, a random per-process key.
fn load_keys(state_keys_file: Option<&Path>) -> anyhow::Result<KeyRing> {
    if let Some(path) = state_keys_file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read state keys file {}", path.display()))?;
        let keys = KeyRing::parse(&text)
            .with_context(|| format!("invalid state keys file {}", path.display()))?;
        tracing::info!(file = %path.display(), keys = keys.key_ids().len(), "state keys loaded");
        return Ok(keys);
    }
    if let Ok(text) = std::env::var(STATE_KEYS_ENV) {
        let keys = KeyRing::parse(&text).with_context(|| format!("invalid {STATE_KEYS_ENV}"))?;
        tracing::info!(
            source = STATE_KEYS_ENV,
            keys = keys.key_ids().len(),
            "state keys loaded"
        );
        return Ok(keys);
    }
    tracing::warn!(
        "no state keys configured (--state-keys-file or {STATE_KEYS_ENV}): sealing requestState with a random \
         key of this process. Multi-round calls then resume only on this process and not after a restart; \
         give every process of a fleet the same keys (make one with `airlock keygen`)"
    );
    Ok(KeyRing::ephemeral())
}

/// Waits for Ctrl-C or, on Unix, SIGTERM (what service managers send).
async fn shutdown_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminate.recv() => {}
                }
                return;
            }
            Err(error) => tracing::warn!(%error, "cannot listen for SIGTERM; stop with Ctrl-C"),
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}

/// Starts the server and runs it until stdin closes (stdio) or Ctrl-C or
/// SIGTERM (HTTP).
pub async fn run(config: ServeConfig) -> anyhow::Result<()> {
    let keys = load_keys(config.state_keys_file.as_deref())?;
    let traces = config.traces.as_ref().map(telemetry::install).transpose()?;
    if let Some(settings) = &config.audit {
        if config.check {
            audit::check(settings)?;
        } else {
            audit::install(settings, &keys)?;
        }
    }
    let auth = match config.transport {
        Transport::Stdio => {
            if config.tokens_file.is_some() || config.auth.is_set() {
                tracing::info!(
                    "stdio serves the local user; tokens and JWT settings apply to HTTP only"
                );
            }
            Authenticator::open()
        }
        Transport::Http(_) => Authenticator::load(config.tokens_file.as_deref(), &config.auth)?,
    };
    let access = AccessSettings {
        rules: match &config.access_policy {
            Some(path) => ServerRules::load(path)?,
            None => ServerRules::default(),
        },
        resource_metadata: auth.metadata().map(|metadata| metadata.url().to_owned()),
    };
    let runtime = config.sandbox.start(protected_paths(&config))?;
    raise_open_file_limit(runtime.limits());
    // A check pulls into a directory of its own, gone when it ends.
    let check_scratch = config.check.then(tempfile::tempdir).transpose()?;
    let staged = match (&config.supply, &check_scratch) {
        (Some(supply), Some(scratch)) => {
            Some(crate::supply::stage_read_only(supply, scratch.path()).await?)
        }
        (Some(supply), None) => Some(crate::supply::stage(supply).await?),
        (None, _) => None,
    };
    let sources = ToolSources {
        dir: config.tools.clone(),
        pulled: PulledFiles::new(staged.as_ref().map(Staged::files).unwrap_or_default()),
    };
    if config.check {
        let registry = Registry::load(&runtime, &sources, config.cache_dir.as_deref()).await?;
        return check::report(&registry, components_origin(&config));
    }
    // A wrong --tools stops the start here; the components load after the
    // server listens (see `live::spawn_loading`).
    {
        let sources = sources.clone();
        tokio::task::spawn_blocking(move || sources.files())
            .await
            .context("reading the tools directory failed unexpectedly")??;
    }
    let mut sealer = StateSealer::new(keys, config.state_ttl, StateLimits::default());
    if let Some(store) = &config.single_use {
        sealer = sealer.with_redemption_store(store.open().await?);
    }
    let task_store = config.task_store.open().await?;
    let tasks = Arc::new(Tasks::new(task_store, config.tasks.clone()));
    let quotas = Arc::new(Quotas::new(config.rate_limit));
    let _forget_quotas =
        AbortOnDrop(tokio::spawn(quotas.clone().forget_idle_forever()).abort_handle());
    let (loaded, loaded_watch) = tokio::sync::watch::channel(false);
    let server = Arc::new(
        Server::new(
            runtime.clone(),
            Arc::new(Registry::default()),
            sealer,
            config.protocol.clone(),
        )?
        .with_tasks(tasks.clone())
        .with_quotas(quotas)
        .with_access(access)
        .loading(loaded_watch.clone(), config.load_wait),
    );
    crate::access::log_mode(
        server.has_access_rules(),
        matches!(config.transport, Transport::Stdio),
    );
    let runner = {
        let runner = tasks.clone().run(server.clone(), server.shutting_down());
        let mut loaded = loaded_watch.clone();
        // Not before the first load: a task's tool is not served until then.
        async move {
            if loaded.wait_for(|loaded| *loaded).await.is_ok() {
                runner.await;
            }
        }
    };
    let _stop_tasks = AbortOnDrop(tokio::spawn(runner).abort_handle());
    tracing::info!(
        dir = %sources,
        "loading components; until done, requests that need them wait (up to --load-wait)"
    );
    let loading = live::spawn_loading(
        server.clone(),
        runtime.clone(),
        LiveOptions {
            tools: sources.clone(),
            cache_dir: config.cache_dir.clone(),
            reload_every: config.reload_every,
            relist_every: config.relist_every,
        },
        loaded,
    );
    let _stop_loading = AbortOnDrop(loading.abort_handle());
    let _stop_tag_refresh = match (&config.supply, staged) {
        (Some(supply), Some(staged)) => {
            if supply.tag_refresh.is_some() && config.reload_every.is_none() {
                anyhow::bail!(
                    "--tag-refresh reloads a moved component the way the tools directory's reloads do: it needs --reload-interval (not `off`)"
                );
            }
            crate::supply::refresh::spawn(supply, staged, sources.pulled.clone())?
                .map(|refresh| AbortOnDrop(refresh.abort_handle()))
        }
        _ => None,
    };
    let legacy = Arc::new(Legacy::new(server.clone(), config.bridge.clone()));
    let sessions = Sessions::new(config.max_sessions, config.session_idle_timeout)
        .with_max_per_principal(config.max_sessions_per_principal);
    let endpoint = Arc::new(Endpoint::new(server.clone(), legacy, sessions));
    let address = match config.transport {
        Transport::Stdio => {
            let routes = Router::new();
            // No drain on stdio: the metrics connections never close early.
            let (_never, not_draining) = tokio::sync::watch::channel(false);
            let _metrics = metrics::start(
                config.metrics.as_ref(),
                metrics::Serving {
                    server: &server,
                    runtime: &runtime,
                    routes,
                    limits: config.connections,
                    draining: not_draining,
                },
            )
            .await?;
            tracing::info!("serving MCP on stdio");
            let served = tokio::select! {
                served = stdio::serve(endpoint, config.max_body_bytes) => {
                    served.context("stdio transport failed")
                }
                error = load_failure(loading) => Err(error),
            };
            tasks.hand_back().await;
            audit::shut_down();
            if let Some(traces) = traces {
                traces.shut_down().await;
            }
            return served;
        }
        Transport::Http(address) => address,
    };
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let address = listener.local_addr()?;
    auth.log_mode(address);
    let allowed_hosts = http::LOCAL_HOSTS
        .iter()
        .map(|host| (*host).to_owned())
        .chain(config.allowed_hosts.iter().cloned())
        .collect();
    // What /healthz and /readyz report, on any listener that mounts
    // `http::health_routes`; drained first when shutting down.
    let health = Arc::new(http::Health::new(
        server.clone(),
        config.connections.readiness_timeout,
        loaded_watch,
    ));
    let settings = http::HttpSettings {
        admission: http::Admission {
            allowed_hosts,
            allowed_origins: config.allowed_origins.clone(),
            auth,
            max_body_bytes: config.max_body_bytes,
        },
        limits: config.connections,
        health: health.clone(),
        card: Arc::new(http::ServerCard::new(config.card.clone(), server.clone())),
    };
    let _metrics = metrics::start(
        config.metrics.as_ref(),
        metrics::Serving {
            server: &server,
            runtime: &runtime,
            routes: http::health_routes(health.clone()),
            limits: config.connections,
            draining: health.draining(),
        },
    )
    .await?;
    tracing::info!("listening on http://{address}/mcp");
    let shutdown = {
        let tasks = tasks.clone();
        async move {
            shutdown_signal().await;
            // At once, not after the drain: other hosts run the rounds meanwhile.
            tasks.stop_claiming();
        }
    };
    let served = tokio::select! {
        served = http::serve(endpoint, settings, listener, shutdown) => {
            served.context("HTTP transport failed")
        }
        error = load_failure(loading) => Err(error),
    };
    tasks.hand_back().await;
    audit::shut_down();
    if let Some(traces) = traces {
        traces.shut_down().await;
    }
    served
}

/// Resolves with the error if the first load of the tools directory
/// fails (see [`live::spawn_loading`]); never resolves otherwise.
async fn load_failure(loading: tokio::task::JoinHandle<anyhow::Result<()>>) -> anyhow::Error {
    match loading.await {
        Ok(Err(error)) => error.context("cannot load the tools directory"),
        Err(error) if error.is_panic() => {
            anyhow::anyhow!("loading the tools directory failed: {error}")
        }
        Ok(Ok(())) | Err(_) => std::future::pending().await,
    }
}

/// A task that is aborted when this is dropped.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
