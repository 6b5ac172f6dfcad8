//! The options about components pulled by OCI reference (`airlock serve`
//! and `airlock pull`), and the [`SupplySettings`] they make.

use std::path::PathBuf;
use std::time::Duration;

use super::sandbox::SandboxOptions;
use super::values;
use crate::registry;
use crate::supply::{RegistrySettings, SupplySettings};

/// Options about components pulled by OCI reference.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Components from a registry")]
pub struct SupplyOptions {
    /// TOML file naming components by OCI reference (`registry/repository:tag` or
    /// `…@sha256:<digest>`), each in a table named after it with its manifest inline or as a file
    /// (docs/publishing.md). They are pulled at start and served beside the tools directory's.
    #[arg(long, value_name = "FILE")]
    pub components: Option<PathBuf>,
    /// Lock file of the digests `airlock pull` resolved: `serve` serves exactly these digests
    /// (taken from the pull cache without asking the registry when it holds them) and refuses to
    /// start if a component of --components is not in it; `pull` writes it.
    #[arg(long, value_name = "FILE", requires = "components")]
    pub lock: Option<PathBuf>,
    /// Directory of pulled blobs, by digest, and of the components staged from them [default:
    /// $XDG_CACHE_HOME/airlock/pulled, else ~/.cache/airlock/pulled, else ./airlock-pulled].
    #[arg(long, value_name = "DIR")]
    pub pull_cache_dir: Option<PathBuf>,
    /// Longest time one component's pull (its manifest and its layer) may take; a slower one is
    /// refused. Also the connect and read timeout of each request.
    #[arg(long, value_name = "DURATION", default_value = "60s",
          value_parser = values::duration(Duration::from_millis(100)))]
    pub pull_timeout: Duration,
    /// Largest manifest, referrers list, signature payload, Sigstore bundle or token answer read
    /// from a registry. Each is read with this cap as it streams in: an answer announcing more is
    /// refused unread, one sending more is cut there and refused.
    #[arg(long, value_name = "SIZE", default_value = "64KiB",
          value_parser = values::size(1 << 10, 64 << 20))]
    pub max_registry_document_size: u64,
    /// How many times a registry request (a manifest, a layer, a referrer) that failed for a
    /// reason that passes (connection refused or reset, 429, 502, 503, 504) is tried again, after
    /// a delay doubling from 200ms (at most 5s) with a random part cut; all within --pull-timeout.
    /// Other failures are final at once.
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(0..=10))]
    pub pull_retries: u32,
    /// Registry (`host[:port]`) reached over plain HTTP; repeatable. Loopback registries always
    /// are; every other one is reached over HTTPS.
    #[arg(long = "plain-http-registry", value_name = "HOST")]
    pub plain_http_registries: Vec<String>,
    /// File holding a bearer token sent to every registry. Without it or
    /// --registry-basic-auth-file: AIRLOCK_REGISTRY_TOKEN, else AIRLOCK_REGISTRY_BASIC_AUTH, else
    /// each registry's entry of the Docker config ($DOCKER_CONFIG/config.json, else
    /// ~/.docker/config.json).
    #[arg(long, value_name = "FILE", conflicts_with = "registry_basic_auth_file")]
    pub registry_token_file: Option<PathBuf>,
    /// File holding `user:password` for basic authentication to every registry (it wins over the
    /// environment and the Docker config, as --registry-token-file does).
    #[arg(long, value_name = "FILE")]
    pub registry_basic_auth_file: Option<PathBuf>,
    /// Public key (PEM, ECDSA P-256, as `cosign generate-key-pair` writes `cosign.pub`) trusted to
    /// sign pulled components; repeatable. With one, a component loads only if its registry holds
    /// a cosign signature by one of them naming its manifest digest (checked again from the pull
    /// cache at every start), unless its entry says `unsigned = true`.
    #[arg(long = "cosign-key", value_name = "FILE")]
    pub cosign_keys: Vec<PathBuf>,
    /// Sigstore trusted root (`trusted_root.json`: the Fulcio certificate authorities and the
    /// transparency log keys, as `cosign trusted-root create` or Sigstore's TUF repository gives
    /// it) for keyless signatures. With it, a component loads only if a Sigstore bundle attached
    /// to its manifest (an OCI referrer, as `cosign sign --new-bundle-format` writes it) signs its
    /// manifest digest by a --sigstore-identity, checked offline (docs/publishing.md), unless its
    /// entry says `unsigned = true`.
    #[arg(long, value_name = "FILE")]
    pub sigstore_trusted_root: Option<PathBuf>,
    /// Signer trusted for keyless signatures: `"<OIDC issuer> <certificate subject>"` (the
    /// subject an email or URI subject alternative name), both exact; repeatable.
    #[arg(
        long = "sigstore-identity",
        value_name = "ISSUER SUBJECT",
        requires = "sigstore_trusted_root"
    )]
    pub sigstore_identities: Vec<crate::supply::trust::Identity>,
    /// How often `serve` resolves the tags of --components again; a moved tag's new digest is
    /// pulled, checked like at start and reloaded (if it is refused, the old one keeps serving).
    /// `off`: tags are resolved once, at start. Ignored with --lock, which wins.
    #[arg(long, value_name = "DURATION", default_value = "off", value_parser = values::interval)]
    pub tag_refresh: Duration,
}

impl SupplyOptions {
    /// The settings of pulls, if --components is given; `max_bytes` is
    /// --max-component-size.
    pub fn settings(self, max_bytes: u64) -> Option<SupplySettings> {
        let components = self.components?;
        let cache_dir = self
            .pull_cache_dir
            .or_else(|| registry::default_cache_dir().map(|dir| dir.join("pulled")))
            .unwrap_or_else(|| PathBuf::from("airlock-pulled"));
        Some(SupplySettings {
            components,
            lock: self.lock,
            cache_dir,
            registry: RegistrySettings {
                timeout: self.pull_timeout,
                retries: self.pull_retries,
                max_bytes,
                max_document_bytes: self.max_registry_document_size,
                plain_http: self.plain_http_registries,
                token_file: self.registry_token_file,
                basic_auth_file: self.registry_basic_auth_file,
            },
            cosign_keys: self.cosign_keys,
            sigstore_trusted_root: self.sigstore_trusted_root,
            sigstore_identities: self.sigstore_identities,
            tag_refresh: (!self.tag_refresh.is_zero()).then_some(self.tag_refresh),
        })
    }
}

/// Options of `airlock pull`.
#[derive(Debug, Clone, clap::Args)]
pub struct PullOptions {
    /// The TOML file of settings `airlock serve` reads (keys of options pull does not take are
    /// skipped).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to pull and where to write the lock.
    #[command(flatten)]
    pub supply: SupplyOptions,
    /// The same component size limit `airlock serve` would use.
    #[command(flatten)]
    pub sandbox: SandboxOptions,
}

impl PullOptions {
    /// What to pull, and the lock file to write.
    pub fn into_settings(self) -> anyhow::Result<(SupplySettings, PathBuf)> {
        let max_bytes = self.sandbox.max_component_size;
        let settings = self
            .supply
            .settings(max_bytes)
            .ok_or_else(|| anyhow::anyhow!("`airlock pull` needs --components"))?;
        let lock = settings
            .lock
            .clone()
            .ok_or_else(|| anyhow::anyhow!("`airlock pull` needs --lock, the file to write"))?;
        Ok((settings, lock))
    }
}
