//! Components pulled by OCI reference, served like the tools directory's.
//!
//! A components file names each component by reference
//! (`registry/repository:tag` or `…@sha256:<digest>`), with its manifest
//! given inline or as a file ([`components`]). At start, each reference is
//! resolved to the digest of its manifest, which must be the Wasm OCI
//! artifact layout: one `application/wasm` layer ([`pull`]). Every blob's
//! digest is checked, and blobs are kept in a cache by digest ([`store`]).
//! Each registry is sent the credentials chosen for its host
//! ([`credentials`]), every body it sends is read with its cap as it streams
//! in ([`distribution`]), and a request that fails for a reason that passes
//! is tried again ([`retry`]).
//! Each component is then staged as `served/sha256-<digest>/NAME.wasm` with
//! its manifest `NAME.toml` beside it, and loaded by the registry exactly
//! like a file of the tools directory: so the digest is in every log line,
//! audit record and `airlock inspect` report that names the file.
//!
//! With trusted keys (`--cosign-key`) or a Sigstore trusted root and
//! identities (`--sigstore-trusted-root`, `--sigstore-identity`), a
//! component loads only if a Sigstore bundle attached to its manifest as an
//! OCI referrer ([`referrers`]) signs its manifest digest by a trusted key
//! or identity ([`bundle`], [`trust`]), or, with keys, a legacy cosign
//! signature by one of them names it ([`signature`]). An entry of the
//! components file may opt out (`unsigned = true`), which is logged as a
//! warning at every start.
//!
//! `airlock pull` resolves every reference and writes a lock of digests
//! ([`lock`]); a server started with the lock serves exactly those digests,
//! and takes them from the cache without asking the registry when the cache
//! holds them. Without a lock, tags may be resolved again while the server
//! runs (`--tag-refresh`, [`refresh`]).

mod bundle;
mod certificate;
pub mod components;
pub mod credentials;
mod digest;
mod distribution;
pub mod lock;
mod pull;
mod reference;
mod referrers;
pub mod refresh;
mod retry;
pub mod signature;
mod store;
pub mod trust;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, bail};
use tracing::{info, warn};

use self::bundle::Trust;
use self::components::{Components, Wanted};
use self::lock::Lock;
use self::pull::{PullError, Puller};
use self::signature::TrustedKeys;
use self::store::Pulled;
use self::store::Store;
use self::trust::{Identity, KeylessTrust};

/// Where to reach registries, and the bounds of every pull.
#[derive(Debug, Clone)]
pub struct RegistrySettings {
    /// The longest one component's pull may take (manifest and blob),
    /// its retries included.
    pub timeout: Duration,
    /// How many times a request that failed for a reason that passes is
    /// tried again (`--pull-retries`).
    pub retries: u32,
    /// The largest component blob (`--max-component-size`).
    pub max_bytes: u64,
    /// The largest manifest, referrers list, signature payload, Sigstore
    /// bundle or token answer (`--max-registry-document-size`).
    pub max_document_bytes: u64,
    /// Registries (`host[:port]`) reached over plain HTTP besides loopback
    /// ones.
    pub plain_http: Vec<String>,
    /// A file holding a bearer token for every registry (else
    /// [`credentials::TOKEN_ENV`], else each registry's Docker config entry).
    pub token_file: Option<PathBuf>,
    /// A file holding `user:password` for basic auth to every registry.
    pub basic_auth_file: Option<PathBuf>,
}

/// What to pull, from where, and where to keep it.
#[derive(Debug, Clone)]
pub struct SupplySettings {
    /// The components file.
    pub components: PathBuf,
    /// The lock file: served digests (for `serve`), or where to write them
    /// (for `pull`).
    pub lock: Option<PathBuf>,
    /// The cache of blobs by digest and of staged components.
    pub cache_dir: PathBuf,
    /// How registries are reached.
    pub registry: RegistrySettings,
    /// Public keys (PEM, ECDSA P-256) of which one must have signed each
    /// component; none: signatures are not checked.
    pub cosign_keys: Vec<PathBuf>,
    /// A Sigstore trusted root (`trusted_root.json`): with it, keyless
    /// bundles by `sigstore_identities` are trusted.
    pub sigstore_trusted_root: Option<PathBuf>,
    /// The identities trusted to sign keyless.
    pub sigstore_identities: Vec<Identity>,
    /// How often tags are resolved again while serving (without a lock);
    /// `None`: once, at start.
    pub tag_refresh: Option<Duration>,
}

impl SupplySettings {
    /// The trusted keys and identities, if any are configured.
    fn trust(&self) -> anyhow::Result<Option<Trust>> {
        let keys = if self.cosign_keys.is_empty() {
            None
        } else {
            Some(TrustedKeys::read(&self.cosign_keys)?)
        };
        let keyless = match &self.sigstore_trusted_root {
            Some(_) if self.sigstore_identities.is_empty() => {
                bail!("--sigstore-trusted-root needs at least one --sigstore-identity to trust")
            }
            Some(path) => Some(KeylessTrust::read(path, self.sigstore_identities.clone())?),
            None => None,
        };
        Ok((keys.is_some() || keyless.is_some()).then_some(Trust { keys, keyless }))
    }
}

/// Pulls `wanted` (pinned to `pinned` if given) and, with `trust`, checks
/// its signature unless its entry opts out.
async fn obtain(
    puller: &Puller,
    trust: Option<&Trust>,
    wanted: &Wanted,
    pinned: Option<&str>,
) -> Result<Pulled, PullError> {
    let pulled = puller.fetch(&wanted.reference, pinned).await?;
    let Some(trust) = trust else {
        return Ok(pulled);
    };
    if wanted.unsigned {
        warn!(reference = %wanted.reference, digest = %pulled.digest, "SIGNATURE NOT CHECKED: component `{}` is served unsigned (`unsigned = true` in the components file)", wanted.name);
        return Ok(pulled);
    }
    let kind = verify(puller, trust, wanted, &pulled.digest)
        .await
        .map_err(|err| err.at(&pulled.digest))?;
    info!(reference = %wanted.reference, digest = %pulled.digest, "signature verified ({kind})");
    Ok(pulled)
}

/// Checks that the manifest `digest` of `wanted` is signed by a trusted
/// key or identity: by a Sigstore bundle, else (with keys) by a legacy
/// cosign signature. Returns which kind verified.
async fn verify(
    puller: &Puller,
    trust: &Trust,
    wanted: &Wanted,
    digest: &str,
) -> Result<&'static str, PullError> {
    let manifest = puller
        .parts()
        .0
        .read(digest, puller.max_document_bytes())
        .ok_or_else(|| PullError::refused("its manifest is no longer in the cache".to_owned()))?;
    let bundles = match puller.bundles(&wanted.reference, digest).await {
        Ok(bundles) => bundles,
        // The registry is down and no bundle was kept for this digest: a
        // cosign signature kept in the cache may still verify it offline.
        Err(PullError::Unreachable(_)) if trust.keys.is_some() => Vec::new(),
        Err(unreachable) => return Err(unreachable),
    };
    let refused = match trust.check(digest, &manifest, &bundles) {
        Ok(()) => return Ok("Sigstore bundle"),
        Err(reason) => reason,
    };
    let Some(keys) = &trust.keys else {
        return Err(PullError::refused(refused));
    };
    match puller.signatures(&wanted.reference, digest).await {
        Ok(layers) => keys
            .check(digest, &layers)
            .map(|()| "cosign signature")
            .map_err(|reason| {
                PullError::refused(if bundles.is_empty() { reason } else { refused })
            }),
        Err(PullError::Refused { reason, .. }) => Err(PullError::refused(if bundles.is_empty() {
            reason
        } else {
            refused
        })),
        Err(unreachable) => Err(unreachable),
    }
}

/// The components staged at start: what [`refresh`] looks at again.
#[derive(Debug)]
pub struct Staged {
    components: Components,
    served: Vec<Served>,
}

/// One staged component: the entry it was pulled for, at which digest, and
/// its staged file.
#[derive(Debug)]
struct Served {
    wanted: Wanted,
    digest: String,
    file: PathBuf,
}

impl Staged {
    /// The staged component files, in the components file's order.
    pub fn files(&self) -> Vec<PathBuf> {
        self.served
            .iter()
            .map(|served| served.file.clone())
            .collect()
    }
}

/// Pulls (or takes from the cache) every component of the components file
/// and stages it for loading.
///
/// A component whose pull is refused (wrong layout, digest mismatch, too
/// large, not found) is skipped with one `warn!` line naming its reference,
/// digest and the reason. Fails if the files cannot be read, if a component
/// is missing from the lock, or if a registry cannot be reached for a
/// component the cache does not hold.
pub async fn stage(settings: &SupplySettings) -> anyhow::Result<Staged> {
    stage_in(settings, Store::open(&settings.cache_dir)?).await
}

/// [`stage`] for `serve --check`: the cache is read, not written; what is
/// pulled and staged goes to `scratch`.
pub async fn stage_read_only(settings: &SupplySettings, scratch: &Path) -> anyhow::Result<Staged> {
    stage_in(settings, Store::read_only(&settings.cache_dir, scratch)?).await
}

async fn stage_in(settings: &SupplySettings, store: Store) -> anyhow::Result<Staged> {
    let components = Components::read(&settings.components)?;
    let lock = match &settings.lock {
        Some(path) => Some(Lock::read(path)?),
        None => None,
    };
    let trust = settings.trust()?;
    let puller = Puller::new(&settings.registry, &components, store.clone())?;
    let mut served = Vec::new();
    for wanted in components.iter() {
        let pinned = match &lock {
            Some(lock) => Some(lock.digest_of(wanted)?),
            None => None,
        };
        match obtain(&puller, trust.as_ref(), wanted, pinned.as_deref()).await {
            Ok(pulled) => {
                if pulled.from_cache {
                    info!(reference = %wanted.reference, digest = %pulled.digest, "component taken from the cache (the registry was not asked)");
                } else {
                    info!(reference = %wanted.reference, digest = %pulled.digest, "component pulled");
                }
                served.push(Served {
                    wanted: wanted.clone(),
                    file: store.stage(wanted, &pulled)?,
                    digest: pulled.digest,
                });
            }
            Err(PullError::Refused { digest, reason }) => {
                let digest = digest
                    .as_deref()
                    .or(pinned.as_deref())
                    .or(wanted.reference.digest())
                    .unwrap_or("unresolved");
                warn!(reference = %wanted.reference, digest, "skipping component: {reason}");
            }
            Err(PullError::Unreachable(reason)) => bail!(
                "component `{}` ({}): the registry cannot be reached and the cache does not hold it: {reason}",
                wanted.name,
                wanted.reference
            ),
        }
    }
    Ok(Staged { components, served })
}

/// `airlock pull`: resolves every reference of the components file, pulls
/// and checks every component into the cache, and writes the lock file.
/// Fails (writing nothing) if any component cannot be pulled.
pub async fn pull_and_lock(settings: &SupplySettings, lock_path: &Path) -> anyhow::Result<()> {
    let components = Components::read(&settings.components)?;
    let trust = settings.trust()?;
    let store = Store::open(&settings.cache_dir)?;
    let puller = Puller::new(&settings.registry, &components, store)?;
    let mut lock = Lock::default();
    let mut failures = Vec::new();
    for wanted in components.iter() {
        match obtain(&puller, trust.as_ref(), wanted, None).await {
            Ok(pulled) => {
                info!(reference = %wanted.reference, digest = %pulled.digest, "resolved");
                lock.insert(wanted, pulled.digest);
            }
            Err(PullError::Refused { reason, .. } | PullError::Unreachable(reason)) => {
                failures.push(format!(
                    "`{}` ({}): {reason}",
                    wanted.name, wanted.reference
                ));
            }
        }
    }
    if !failures.is_empty() {
        bail!("not locked, nothing written: {}", failures.join("; "));
    }
    lock.write(lock_path)
        .with_context(|| format!("cannot write the lock file {}", lock_path.display()))
}
