//! `airlock serve`: every option with its default, and the start-up sequence
//! (keys, tokens, runtime, tools directory, transport).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::auth::TokenTable;
use crate::live::{self, LiveOptions};
use crate::protocol::{ProtocolSettings, Server};
use crate::registry::{self, Registry};
use crate::runtime::{Runtime, RuntimeLimits};
use crate::state::{KeyRing, StateLimits, StateSealer};
use crate::transport::{http, stdio};

/// Environment variable holding state keys (comma- or newline-separated).
pub const STATE_KEYS_ENV: &str = "AIRLOCK_STATE_KEYS";

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
    /// Memory cap of each tool instance, in MiB.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
    pub max_memory_mib: u64,
    /// Wall-clock deadline of each call (each round of a multi-round call), in milliseconds.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub call_timeout_ms: u64,
    /// Largest result a tool may return, in KiB.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_output_kib: u64,
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
    /// File of state keys, one per line (the first seals, all open). Also: AIRLOCK_STATE_KEYS.
    #[arg(long, env = "AIRLOCK_STATE_KEYS_FILE")]
    pub state_keys_file: Option<PathBuf>,
    /// File of bearer tokens, one `<token> <principal>` per line. Without it HTTP is unauthenticated.
    #[arg(long, env = "AIRLOCK_TOKENS_FILE")]
    pub tokens_file: Option<PathBuf>,
    /// How often to look for added, replaced or removed components in the tools directory, in
    /// milliseconds; 0 never reloads.
    #[arg(long, default_value_t = 500)]
    pub reload_interval_ms: u64,
    /// Extra host name accepted in Host/Origin headers (repeatable); localhost, 127.0.0.1 and [::1] always are.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra exact origin accepted in the Origin header, e.g. https://app.example.com (repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
}

fn mib(n: u64) -> usize {
    usize::try_from(n << 20).unwrap_or(usize::MAX)
}

fn kib(n: u64) -> usize {
    usize::try_from(n << 10).unwrap_or(usize::MAX)
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
    let tokens = match (&options.tokens_file, options.stdio) {
        (Some(path), false) => Some(TokenTable::load(path)?),
        (Some(_), true) => {
            tracing::info!("stdio serves the local user; the tokens file applies to HTTP only");
            None
        }
        (None, _) => None,
    };
    let limits = RuntimeLimits {
        max_memory_bytes: mib(options.max_memory_mib),
        call_timeout: Duration::from_millis(options.call_timeout_ms),
        max_output_bytes: kib(options.max_output_kib),
        max_concurrent_calls: usize::try_from(options.max_concurrent_calls).unwrap_or(usize::MAX),
        ..RuntimeLimits::default()
    };
    let runtime = Runtime::new(limits).context("cannot start the WebAssembly runtime")?;
    let cache_dir = if options.no_cache {
        None
    } else {
        options
            .cache_dir
            .clone()
            .or_else(registry::default_cache_dir)
    };
    let registry = Registry::load(&runtime, &options.tools, cache_dir.as_deref()).await?;
    if registry.tools().is_empty()
        && registry.prompts().is_empty()
        && registry.resources().is_empty()
        && registry.templates().is_empty()
    {
        tracing::warn!(dir = %options.tools.display(), "nothing loaded: drop components (*.wasm) into this directory");
    }
    let sealer = StateSealer::new(
        keys,
        Duration::from_secs(options.state_ttl_secs),
        StateLimits::default(),
    );
    let settings = ProtocolSettings {
        max_rounds: options.max_rounds,
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
    if tokens.is_none() {
        if address.ip().is_loopback() {
            tracing::info!(
                "no tokens file: every HTTP client is principal 'anonymous' (fine for local development)"
            );
        } else {
            tracing::warn!(
                "no tokens file on a non-loopback address: anyone who can reach {address} can call every tool; use --tokens-file"
            );
        }
    }
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
        tokens,
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
