//! Pulling one component by reference: its manifest, which must be the Wasm
//! OCI artifact layout (one `application/wasm` layer), then its layer, each
//! checked against its digest and bounded in size (as it streams in, see
//! [`distribution`](super::distribution)) and time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::Duration;

use oci_client::Reference;
use oci_client::manifest::{OCI_IMAGE_MEDIA_TYPE, OciDescriptor, OciImageManifest};
use oci_client::secrets::RegistryAuth;
use reqwest::StatusCode;

use super::RegistrySettings;
use super::components::Components;
use super::credentials::Credentials;
use super::digest::{sha256_hex, sha256_of};
use super::distribution::{ClientSettings, RegistryClient, RequestError};
use super::retry::{Tried, with_retries};
use super::signature::{PAYLOAD_MEDIA_TYPE, SIGNATURE_ANNOTATION, signature_tag};
use super::store::{Pulled, Store};
use crate::units::format_size;

/// The media type of a component's layer in the Wasm OCI artifact layout
/// (`wkg oci push` writes it).
pub(super) const WASM_MEDIA_TYPE: &str = "application/wasm";

/// Why a component was not pulled.
#[derive(Debug)]
pub(super) enum PullError {
    /// The registry could not be reached: a start without it cannot go on.
    Unreachable(String),
    /// The registry answered, but what it holds is not served: skip it.
    Refused {
        /// The digest of its manifest, if it was resolved.
        digest: Option<String>,
        /// Why.
        reason: String,
    },
}

impl PullError {
    /// Refused for `reason`.
    pub(super) fn refused(reason: String) -> PullError {
        PullError::Refused {
            digest: None,
            reason,
        }
    }

    /// The same error, naming `digest` if it named none.
    pub(super) fn at(self, resolved: &str) -> PullError {
        match self {
            PullError::Refused {
                digest: None,
                reason,
            } => PullError::Refused {
                digest: Some(resolved.to_owned()),
                reason,
            },
            other => other,
        }
    }
}

/// An OCI registry client with the settings of every pull.
pub(super) struct Puller {
    /// Made at the first request (see [`Puller::client`]).
    client: OnceLock<Result<RegistryClient, String>>,
    /// Registries reached over plain HTTP.
    plain_http: Vec<String>,
    /// What is sent to each registry (`host[:port]`) of the components.
    auths: HashMap<String, RegistryAuth>,
    store: Store,
    settings: RegistrySettings,
}

impl Puller {
    /// A client for the registries of `components`: plain HTTP for loopback
    /// ones and those `settings` allow, HTTPS for the rest.
    pub(super) fn new(
        settings: &RegistrySettings,
        components: &Components,
        store: Store,
    ) -> anyhow::Result<Puller> {
        crate::tls::use_ring();
        let credentials = Credentials::read(settings)?;
        let mut auths = HashMap::new();
        for wanted in components.iter() {
            let registry = wanted.reference.resolve_registry();
            if !auths.contains_key(registry) {
                auths.insert(registry.to_owned(), credentials.for_registry(registry)?);
            }
        }
        let mut plain_http = settings.plain_http.clone();
        plain_http.extend(
            components
                .iter()
                .map(|wanted| wanted.reference.resolve_registry().to_owned())
                .filter(|registry| is_loopback(registry)),
        );
        Ok(Puller {
            client: OnceLock::new(),
            plain_http,
            auths,
            store,
            settings: settings.clone(),
        })
    }

    /// The registry client, made at its first use: a start that takes every
    /// component from the cache never makes it (making it loads the
    /// system's root certificates, which takes longer than the rest of
    /// such a start).
    pub(super) fn client(&self) -> Result<&RegistryClient, PullError> {
        self.client
            .get_or_init(|| {
                RegistryClient::new(ClientSettings {
                    plain_http: self.plain_http.clone(),
                    auths: self.auths.clone(),
                    timeout: self.settings.timeout,
                    max_token_bytes: self.settings.max_document_bytes,
                })
                .map_err(|err| format!("cannot make the registry client: {err}"))
            })
            .as_ref()
            .map_err(|err| PullError::Unreachable(err.clone()))
    }

    /// The component at `reference`, pinned to the manifest digest
    /// `pinned` if given (else the reference's own digest, else its tag as
    /// the registry resolves it now). A pinned component the cache holds is
    /// taken from it without asking the registry.
    pub(super) async fn fetch(
        &self,
        reference: &Reference,
        pinned: Option<&str>,
    ) -> Result<Pulled, PullError> {
        let pinned = pinned.or(reference.digest());
        if let Some(digest) = pinned
            && let Some(pulled) = self.cached(digest)
        {
            return Ok(pulled);
        }
        within_pull_timeout(self.settings.timeout, "it", self.pulled(reference, pinned)).await
    }

    /// The manifest digest `reference`'s tag points to now, as the
    /// registry says (a `HEAD` request: nothing is pulled). Only compared
    /// with the digest served; what is then pulled is checked like any pull.
    pub(super) async fn resolve(&self, reference: &Reference) -> Result<String, PullError> {
        let timeout = self.settings.timeout;
        let what = "its tag could not be resolved";
        let client = self.client()?;
        let digest = self.request(what, || {
            client.manifest_digest(
                reference,
                OCI_IMAGE_MEDIA_TYPE,
                self.settings.max_document_bytes,
            )
        });
        tokio::time::timeout(timeout, digest)
            .await
            .unwrap_or_else(|_| {
                Err(PullError::refused(format!(
                    "{what}: no answer within --pull-timeout ({})",
                    humantime::format_duration(timeout)
                )))
            })
    }

    /// Whether the pull cache holds the manifest `digest`, which a pull
    /// keeps only after its layout, its layer and their digests passed.
    pub(super) fn holds(&self, digest: &str) -> bool {
        self.store
            .blob_path(digest)
            .is_some_and(|path| path.is_file())
    }

    fn cached(&self, digest: &str) -> Option<Pulled> {
        let manifest = self.store.read(digest, self.settings.max_document_bytes)?;
        let layer = wasm_layer(&manifest, self.settings.max_bytes).ok()?;
        let wasm = self.store.read(&layer.digest, self.settings.max_bytes)?;
        Some(Pulled {
            digest: digest.to_owned(),
            wasm,
            from_cache: true,
        })
    }

    async fn pulled(
        &self,
        reference: &Reference,
        pinned: Option<&str>,
    ) -> Result<Pulled, PullError> {
        let by = match pinned {
            Some(digest) => reference.clone_with_digest(digest.to_owned()),
            None => reference.clone(),
        };
        let client = self.client()?;
        let manifest = self
            .request("its manifest could not be pulled", || {
                client.manifest(&by, OCI_IMAGE_MEDIA_TYPE, self.settings.max_document_bytes)
            })
            .await?;
        let digest = sha256_of(&manifest);
        if let Some(pinned) = pinned
            && digest != pinned
        {
            return Err(PullError::refused(format!(
                "the registry sent a manifest whose digest is {digest}, not {pinned}"
            )));
        }
        let at = |err: PullError| err.at(&digest);
        let layer = wasm_layer(&manifest, self.settings.max_bytes)
            .map_err(|reason| at(PullError::refused(reason)))?;
        let wasm = match self.store.read(&layer.digest, self.settings.max_bytes) {
            Some(wasm) => wasm,
            None => {
                let wasm = self.pull_layer(&by, &layer).await.map_err(at)?;
                self.keep(&layer.digest, &wasm).map_err(at)?;
                wasm
            }
        };
        self.keep(&digest, &manifest).map_err(at)?;
        Ok(Pulled {
            digest,
            wasm,
            from_cache: false,
        })
    }

    /// Pulls the layer, cut at its listed size (itself at most
    /// `--max-component-size`) as it streams in, and checks its digest.
    pub(super) async fn pull_layer(
        &self,
        reference: &Reference,
        layer: &OciDescriptor,
    ) -> Result<Vec<u8>, PullError> {
        let limit = u64::try_from(layer.size).unwrap_or(0);
        let client = self.client()?;
        let what = "its layer could not be pulled";
        let wasm = with_retries(self.settings.retries, what, || {
            client.blob(reference, &layer.digest, limit)
        })
        .await
        .map_err(|tried| match tried.err {
            RequestError::TooLarge {
                announced: Some(length),
                ..
            } => PullError::refused(format!(
                "the registry announced {} for its layer, more than the {} its manifest lists",
                format_size(length),
                format_size(limit)
            )),
            RequestError::TooLarge { .. } => PullError::refused(format!(
                "the registry sent more than the {} its manifest lists for its layer",
                format_size(limit)
            )),
            _ => failure(what, tried),
        })?;
        let actual = sha256_of(&wasm);
        if actual != layer.digest {
            return Err(PullError::refused(format!(
                "its layer's digest is {actual}, not the {} its manifest names (tampered or corrupted)",
                layer.digest
            )));
        }
        Ok(wasm)
    }

    /// The cosign signature layers (each payload and its signature) of
    /// the manifest `digest` of `reference`: from the cache, else from the
    /// registry's `sha256-<hex>.sig` tag (then kept).
    pub(super) async fn signatures(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<(Vec<u8>, String)>, PullError> {
        within_pull_timeout(
            self.settings.timeout,
            "its signature",
            self.signature_layers(reference, digest),
        )
        .await
    }

    async fn signature_layers(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<(Vec<u8>, String)>, PullError> {
        let tag = signature_tag(digest);
        let by = Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            tag.clone(),
        );
        let max_bytes = self.settings.max_document_bytes;
        let manifest = match self.store.read_signature(digest, max_bytes) {
            Some(manifest) => manifest,
            None => {
                let client = self.client()?;
                self.request(
                    &format!("its signature `{tag}` could not be pulled"),
                    || client.manifest(&by, OCI_IMAGE_MEDIA_TYPE, max_bytes),
                )
                .await
                .map_err(|err| match err {
                    PullError::Refused { reason, .. } => {
                        PullError::refused(format!("it is unsigned: {reason}"))
                    }
                    unreachable => unreachable,
                })?
            }
        };
        let parsed: OciImageManifest = serde_json::from_slice(&manifest).map_err(|err| {
            PullError::refused(format!(
                "its signature manifest is not an OCI image manifest: {err}"
            ))
        })?;
        let mut layers = Vec::new();
        for layer in &parsed.layers {
            let signature = layer
                .annotations
                .as_ref()
                .and_then(|annotations| annotations.get(SIGNATURE_ANNOTATION));
            let Some(signature) = signature.filter(|_| layer.media_type == PAYLOAD_MEDIA_TYPE)
            else {
                continue;
            };
            if sha256_hex(&layer.digest).is_none()
                || !u64::try_from(layer.size).is_ok_and(|size| size <= max_bytes)
            {
                return Err(PullError::refused(format!(
                    "its signature payload {} is not a sha256 blob of at most {} (--max-registry-document-size)",
                    layer.digest,
                    format_size(max_bytes)
                )));
            }
            let payload = match self.store.read(&layer.digest, max_bytes) {
                Some(payload) => payload,
                None => {
                    let payload = self.pull_layer(&by, layer).await?;
                    self.keep(&layer.digest, &payload)?;
                    payload
                }
            };
            layers.push((payload, signature.clone()));
        }
        self.store
            .write_signature(digest, &manifest)
            .map_err(|err| PullError::refused(format!("cannot keep its signature: {err:#}")))?;
        Ok(layers)
    }

    /// The cache and the time one pull may take (for the pulls of other
    /// modules).
    pub(super) fn parts(&self) -> (&Store, std::time::Duration) {
        (&self.store, self.settings.timeout)
    }

    /// The largest manifest, referrers list, signature payload or bundle
    /// read (`--max-registry-document-size`).
    pub(super) fn max_document_bytes(&self) -> u64 {
        self.settings.max_document_bytes
    }

    /// Sends `request`, tried again after failures that pass (see
    /// [`retry`](super::retry)); a failure says `what` could not be done.
    pub(super) async fn request<T, F, Fut>(&self, what: &str, request: F) -> Result<T, PullError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, RequestError>>,
    {
        with_retries(self.settings.retries, what, request)
            .await
            .map_err(|tried| failure(what, tried))
    }

    /// Keeps `bytes`, whose digest `digest` was checked, in the cache.
    pub(super) fn keep(&self, digest: &str, bytes: &[u8]) -> Result<(), PullError> {
        self.store
            .write(digest, bytes)
            .map_err(|err| PullError::refused(format!("cannot keep it in the cache: {err:#}")))
    }
}

/// The one layer of a Wasm OCI artifact manifest: refuses another layout,
/// another media type, and a layer larger than `max_bytes`.
fn wasm_layer(manifest: &[u8], max_bytes: u64) -> Result<OciDescriptor, String> {
    let manifest: OciImageManifest = serde_json::from_slice(manifest)
        .map_err(|err| format!("its manifest is not an OCI image manifest: {err}"))?;
    let [layer] = &manifest.layers[..] else {
        return Err(format!(
            "its manifest has {} layers: a component is one `{WASM_MEDIA_TYPE}` layer",
            manifest.layers.len()
        ));
    };
    if layer.media_type != WASM_MEDIA_TYPE {
        return Err(format!(
            "its layer's media type is `{}`, not `{WASM_MEDIA_TYPE}`",
            layer.media_type
        ));
    }
    if sha256_hex(&layer.digest).is_none() {
        return Err(format!("its layer's digest {} is not sha256", layer.digest));
    }
    match u64::try_from(layer.size) {
        Ok(size) if size <= max_bytes => Ok(layer.clone()),
        _ => Err(format!(
            "its layer is {} bytes, more than --max-component-size ({})",
            layer.size,
            format_size(max_bytes)
        )),
    }
}

/// Tells an unreachable registry from one that refused, saying how many
/// tries the request had if it had more than one.
fn failure(what: &str, tried: Tried) -> PullError {
    let Tried { err, tries } = tried;
    let what = if tries > 1 {
        format!("{what} (after {tries} tries)")
    } else {
        what.to_owned()
    };
    match err {
        RequestError::Transport(err) if err.is_connect() || err.is_timeout() => {
            PullError::Unreachable(format!("{what}: {err}"))
        }
        RequestError::Status { url, status, .. } if status == StatusCode::UNAUTHORIZED => {
            PullError::refused(format!(
                "{what}: the registry answered {status} at {url}: the credentials sent to it are missing or wrong"
            ))
        }
        RequestError::TooLarge { .. } => {
            PullError::refused(format!("{what}: {err} (--max-registry-document-size)"))
        }
        err => PullError::refused(format!("{what}: {err}")),
    }
}

/// Whether `registry` (`host[:port]`) is this machine.
fn is_loopback(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        Some((host, port)) if port.chars().all(|c| c.is_ascii_digit()) => host,
        _ => registry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// `work`, refused if it takes longer than `timeout` (`--pull-timeout`),
/// the refusal saying what was being pulled (`what`).
pub(super) async fn within_pull_timeout<T>(
    timeout: Duration,
    what: &str,
    work: impl Future<Output = Result<T, PullError>>,
) -> Result<T, PullError> {
    tokio::time::timeout(timeout, work)
        .await
        .unwrap_or_else(|_| {
            Err(PullError::refused(format!(
                "pulling {what} took longer than --pull-timeout ({})",
                humantime::format_duration(timeout)
            )))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_registries_are_told_apart() {
        for registry in [
            "127.0.0.1:5000",
            "localhost",
            "localhost:5000",
            "[::1]:5000",
        ] {
            assert!(is_loopback(registry), "{registry}");
        }
        for registry in [
            "registry.example.com",
            "10.0.0.1:5000",
            "localhost.example.com",
        ] {
            assert!(!is_loopback(registry), "{registry}");
        }
    }

    fn manifest(layers: &[(&str, i64)]) -> Vec<u8> {
        let layers: Vec<_> = layers
            .iter()
            .map(|(media_type, size)| {
                serde_json::json!({"mediaType": media_type, "digest": format!("sha256:{}", "0".repeat(64)), "size": size})
            })
            .collect();
        serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": OCI_IMAGE_MEDIA_TYPE,
            "config": {"mediaType": "application/vnd.wasm.config.v0+json", "digest": format!("sha256:{}", "1".repeat(64)), "size": 2},
            "layers": layers,
        }))
        .unwrap()
    }

    #[test]
    fn only_one_wasm_layer_within_the_size_limit_is_a_component() {
        assert!(wasm_layer(&manifest(&[(WASM_MEDIA_TYPE, 100)]), 100).is_ok());
        let refused = |m: Vec<u8>| wasm_layer(&m, 100).unwrap_err();
        assert!(refused(manifest(&[(WASM_MEDIA_TYPE, 101)])).contains("--max-component-size"));
        assert!(refused(manifest(&[("application/octet-stream", 10)])).contains("media type"));
        assert!(
            refused(manifest(&[(WASM_MEDIA_TYPE, 1), (WASM_MEDIA_TYPE, 1)])).contains("2 layers")
        );
        assert!(refused(b"{}".to_vec()).contains("not an OCI image manifest"));
    }
}
