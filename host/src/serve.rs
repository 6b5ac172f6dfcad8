//! `airlock serve`: every option with its default, and the start-up sequence
//! (keys, tokens, runtime, tools directory, transport).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::auth::{AuthOptions, Authenticator};
use crate::live::{self, LiveOptions};
use crate::policy::{PolicySources, ProtectedPaths, Secrets};
use crate::protocol::legacy::LegacyOptions;
use crate::protocol::{ProtocolSettings, Server};
use crate::registry::{self, Registry};
use crate::runtime::{Runtime, RuntimeLimits};
use crate::state::{
    DEFAULT_REDEMPTION_CAPACITY, InMemoryRedemptions, KeyRing, StateLimits, StateSealer,
};
use crate::transport::{http, stdio};

/// Environment variable holding state keys (comma- or newline-separated).
pub const STATE_KEYS_ENV: &str = "AIRLOCK_STATE_KEYS";

/// The sandbox's defaults and the sources of what manifests may grant;
/// shared by `airlock serve` and `airlock inspect`.
#[derive(Debug, Clone, clap::Args)]
pub struct SandboxOptions {
    /// Memory cap of each instance, in MiB (a manifest may lower it).
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_memory_mib: u64,
    /// Wall-clock deadline of each call (each round of a multi-round call), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub call_timeout_ms: u64,
    /// Largest reply one call may produce, encoded, in KiB; also the most log and progress text
    /// one call may report.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_kib: u64,
    /// Meter fuel, so that manifests may set `[limits] fuel` (costs every call some speed).
    #[arg(long)]
    pub enable_fuel: bool,
    /// Most host resources (open files, streams, pollables, HTTP requests and fields) one
    /// instance may hold at once.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(16..=1_000_000))]
    pub max_host_resources: u64,
    /// Largest set of HTTP header fields a tool may build for one request or response, in KiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=16_384))]
    pub max_http_fields_kib: u64,
    /// Most content blocks one result (or prompt, or resource read) may hold.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_content_blocks: u64,
    /// Most input requests one input_required outcome may make.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_input_requests: u64,
    /// Secrets manifests may grant as environment variables: a TOML file of `name = "value"` lines.
    #[arg(long, env = "AIRLOCK_SECRETS_FILE")]
    pub secrets_file: Option<PathBuf>,
}

impl SandboxOptions {
    /// Starts the WebAssembly runtime with these defaults and secrets, at
    /// most `max_concurrent_calls` instances at once, and no grant exposing
    /// `protected` (or the secrets file).
    pub fn runtime(
        &self,
        max_concurrent_calls: usize,
        protected: ProtectedPaths,
    ) -> anyhow::Result<Arc<Runtime>> {
        let secrets = match &self.secrets_file {
            None => Secrets::default(),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read secrets file {}", path.display()))?;
                Secrets::parse(&text, path).map_err(anyhow::Error::msg)?
            }
        };
        let limits = RuntimeLimits {
            max_memory_bytes: mib(self.max_memory_mib),
            call_timeout: Duration::from_millis(self.call_timeout_ms),
            max_output_bytes: kib(self.max_output_kib),
            max_concurrent_calls,
            fuel: self.enable_fuel,
            max_host_resources: count(self.max_host_resources),
            max_http_fields_bytes: kib(self.max_http_fields_kib),
            max_content_blocks: count(self.max_content_blocks),
            max_input_requests: count(self.max_input_requests),
            ..RuntimeLimits::default()
        };
        let protected = match &self.secrets_file {
            Some(path) => protected.no_access(path),
            None => protected,
        };
        Runtime::with_sources(limits, PolicySources { secrets, protected })
            .context("cannot start the WebAssembly runtime")
    }
}

/// Options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeOptions {
    /// Directory of tool components (`*.wasm`).
    #[arg(long, env = "AIRLOCK_TOOLS", default_value = "tools")]
    pub tools: PathBuf,
    /// Address to serve Streamable HTTP on; the endpoint is `/mcp`. Port 0 picks a free port.
    #[arg(long, env = "AIRLOCK_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// Serve MCP on stdin/stdout instead of HTTP (logs stay on stderr).
    #[arg(long)]
    pub stdio: bool,
    /// Directory for compiled components [default: $XDG_CACHE_HOME/airlock or ~/.cache/airlock].
    #[arg(long, env = "AIRLOCK_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every component at start instead of using the on-disk cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Sandbox defaults and the sources of what manifests grant.
    #[command(flatten)]
    pub sandbox: SandboxOptions,
    /// Largest request body (or stdio line) accepted, in KiB.
    #[arg(long, default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_body_kib: u64,
    /// Most tool instances running at once; further calls wait for a free slot.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub max_concurrent_calls: u64,
    /// Most rounds one multi-round call may take.
    #[arg(long, default_value_t = 32, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_rounds: u32,
    /// How long a requestState stays valid, in seconds.
    #[arg(long, default_value_t = 600, value_parser = clap::value_parser!(u64).range(1..))]
    pub state_ttl_secs: u64,
    /// Make each requestState redeemable once: a replayed token is refused. Off by default: a
    /// client that loses the answer to a round (network failure) cannot retry it and must restart
    /// the request. Ids are remembered in this process only.
    #[arg(long, env = "AIRLOCK_SINGLE_USE_STATE", value_parser = clap::builder::BoolishValueParser::new())]
    pub single_use_state: bool,
    /// Most redeemed requestState ids remembered at once with --single-use-state (they are
    /// forgotten when their token expires); when full, retried rounds are refused until some expire.
    #[arg(long, env = "AIRLOCK_SINGLE_USE_CAPACITY", default_value_t = DEFAULT_REDEMPTION_CAPACITY as u64,
          value_parser = clap::value_parser!(u64).range(1..), requires = "single_use_state")]
    pub single_use_capacity: u64,
    /// File of state keys, one per line (the first seals, all open). Also: AIRLOCK_STATE_KEYS.
    #[arg(long, env = "AIRLOCK_STATE_KEYS_FILE")]
    pub state_keys_file: Option<PathBuf>,
    /// File of bearer tokens, one `<token> <name>` per line (the principal is `token:<name>`). Without it and without JWT keys,
    /// HTTP is unauthenticated.
    #[arg(long, env = "AIRLOCK_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// How often to look for added, replaced or removed components in the tools directory, in
    /// milliseconds; 0 never reloads.
    #[arg(long, default_value_t = 500)]
    pub reload_interval_ms: u64,
    /// Least time between two listings of one component that reports its lists changed, in
    /// milliseconds; the reports that come meanwhile are answered by one listing.
    #[arg(long, env = "AIRLOCK_RELIST_INTERVAL_MS", default_value_t = 1000)]
    pub relist_interval_ms: u64,
    /// Extra host name accepted in Host/Origin headers (repeatable); localhost, 127.0.0.1 and [::1] always are.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra exact origin accepted in the Origin header, e.g. https://app.example.com (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// JWT access tokens and OAuth protected-resource metadata (HTTP).
    #[command(flatten)]
    pub auth: AuthOptions,
    /// HTTP connection timeouts and cap.
    #[command(flatten)]
    pub connections: http::ConnectionOptions,
    /// Sessions of 2025-era clients (`initialize`) and the bridge that serves them.
    #[command(flatten)]
    pub legacy: LegacyOptions,
}

fn mib(n: u64) -> usize {
    usize::try_from(n << 20).unwrap_or(usize::MAX)
}

fn kib(n: u64) -> usize {
    usize::try_from(n << 10).unwrap_or(usize::MAX)
}

fn count(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Airlock's own files, kept out of every grant: the tools directory and
/// the compile cache (not writable), and every file of keys, tokens or
/// secrets (not readable).
fn protected_paths(options: &ServeOptions, cache_dir: Option<&std::path::Path>) -> ProtectedPaths {
    let mut protected = ProtectedPaths::default().no_write(&options.tools);
    if let Some(cache_dir) = cache_dir {
        protected = protected.no_write(cache_dir);
    }
    let auth = &options.auth;
    let secret_files = options
        .state_keys_file
        .iter()
        .chain(&options.tokens_file)
        .chain(&auth.jwt_key_files)
        .chain(&auth.jwt_hs256_secret_file);
    secret_files.fold(protected, |protected, file| protected.no_access(file))
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
fn load_keys(options: &ServeOptions) -> anyhow::Result<KeyRing> {
    if let Some(path) = &options.state_keys_file {
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
pub async fn run(options: ServeOptions) -> anyhow::Result<()> {
    let keys = load_keys(&options)?;
    let auth = if options.stdio {
        if options.tokens_file.is_some() || options.auth.is_set() {
            tracing::info!(
                "stdio serves the local user; tokens and JWT settings apply to HTTP only"
            );
        }
        Authenticator::open()
    } else {
        Authenticator::load(options.tokens_file.as_deref(), &options.auth)?
    };
    let cache_dir = if options.no_cache {
        None
    } else {
        options
            .cache_dir
            .clone()
            .or_else(registry::default_cache_dir)
    };
    let runtime = options.sandbox.runtime(
        usize::try_from(options.max_concurrent_calls).unwrap_or(usize::MAX),
        protected_paths(&options, cache_dir.as_deref()),
    )?;
    raise_open_file_limit(runtime.limits());
    let registry = Registry::load(&runtime, &options.tools, cache_dir.as_deref()).await?;
    if registry.tools().is_empty()
        && registry.prompts().is_empty()
        && registry.resources().is_empty()
        && registry.templates().is_empty()
    {
        tracing::warn!(dir = %options.tools.display(), "nothing loaded: drop components (*.wasm) into this directory");
    }
    let mut sealer = StateSealer::new(
        keys,
        Duration::from_secs(options.state_ttl_secs),
        StateLimits::default(),
    );
    if options.single_use_state {
        let capacity = usize::try_from(options.single_use_capacity).unwrap_or(usize::MAX);
        sealer = sealer.with_redemption_store(Arc::new(InMemoryRedemptions::new(capacity)));
        tracing::info!(
            capacity,
            "single-use requestState: each token opens once; used ids are remembered in this \
             process only, so behind a load balancer a replay to another process is not refused"
        );
    }
    let settings = ProtocolSettings {
        max_rounds: options.max_rounds,
        legacy: options.legacy.bridge(),
        ..ProtocolSettings::default()
    };
    let server = Arc::new(Server::new(
        runtime.clone(),
        Arc::new(registry),
        sealer,
        settings,
    )?);
    let updates = live::spawn(
        server.clone(),
        runtime,
        LiveOptions {
            dir: options.tools.clone(),
            cache_dir,
            reload_every: (options.reload_interval_ms > 0)
                .then(|| Duration::from_millis(options.reload_interval_ms)),
            relist_every: Duration::from_millis(options.relist_interval_ms),
        },
    );
    let _stop_updates = AbortOnDrop(updates);
    let max_body = kib(options.max_body_kib);
    if options.stdio {
        tracing::info!("serving MCP on stdio");
        return stdio::serve(server, max_body)
            .await
            .context("stdio transport failed");
    }
    let listener = tokio::net::TcpListener::bind(options.listen)
        .await
        .with_context(|| format!("cannot listen on {}", options.listen))?;
    let address = listener.local_addr()?;
    auth.log_mode(address);
    let mut allowed_hosts: Vec<String> =
        http::LOCAL_HOSTS.iter().map(|h| (*h).to_owned()).collect();
    allowed_hosts.extend(options.allowed_hosts.iter().cloned());
    if options.allowed_origins.iter().any(|o| !o.contains("://")) {
        bail!("--allowed-origin takes a full origin such as https://app.example.com");
    }
    let settings = http::HttpSettings {
        max_body_bytes: max_body,
        allowed_hosts,
        allowed_origins: options.allowed_origins.clone(),
        auth,
        limits: options.connections.limits(),
        sessions: options.legacy.sessions(),
    };
    tracing::info!("listening on http://{address}/mcp");
    let shutdown = {
        let server = server.clone();
        async move {
            shutdown_signal().await;
            tracing::info!("shutting down: finishing the requests in flight");
            server.shut_down();
        }
    };
    http::serve(server, settings, listener, shutdown)
        .await
        .context("HTTP transport failed")
}

/// A task that is aborted when this is dropped.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}
