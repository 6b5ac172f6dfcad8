//! The Sigstore bundles attached to a component's manifest as OCI
//! referrers: listed with the referrers API (`GET /v2/<repository>/
//! referrers/<digest>`), or, where a registry has none (it answers 404),
//! with the referrers tag schema (the image index at the tag
//! `sha256-<hex>`). Each referrer manifest whose subject is the manifest
//! and whose one layer is a bundle is pulled, its digest and the bundle's
//! checked, and both kept in the pull cache with the list of bundles, so a
//! component is verified again offline. A manifest found with no bundle
//! is asked about again at the next start.

use oci_client::Reference;
use oci_client::manifest::{
    ImageIndexEntry, OCI_IMAGE_INDEX_MEDIA_TYPE, OCI_IMAGE_MEDIA_TYPE, OciImageIndex,
    OciImageManifest,
};

use super::bundle::BUNDLE_MEDIA_TYPE;
use super::digest::sha256_of;
use super::pull::{PullError, Puller, within_pull_timeout};
use crate::units::format_size;

/// Most referrers of one manifest looked at for its Sigstore bundles.
const MAX_REFERRERS: usize = 16;

impl Puller {
    /// The Sigstore bundles of the manifest `digest` of `reference`: from
    /// the cache if its referrers were fetched before, else from the
    /// registry (then kept).
    pub(super) async fn bundles(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<Vec<u8>>, PullError> {
        let (store, timeout) = self.parts();
        if let Some(digests) = store.read_bundles(digest) {
            let kept: Option<Vec<Vec<u8>>> = digests
                .iter()
                .map(|bundle| store.read(bundle, self.max_document_bytes()))
                .collect();
            if let Some(kept) = kept {
                return Ok(kept);
            }
        }
        within_pull_timeout(
            timeout,
            "its Sigstore bundles",
            self.pull_bundles(reference, digest),
        )
        .await
    }

    async fn pull_bundles(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<Vec<u8>>, PullError> {
        let (store, _) = self.parts();
        let max_bytes = self.max_document_bytes();
        let client = self.client()?;
        let entries = self.bundle_referrers(reference, digest).await?;
        let mut bundles = Vec::new();
        let mut digests = Vec::new();
        // A component has one or two bundles; a registry listing more is
        // not followed further than MAX_REFERRERS entries.
        for entry in entries.iter().take(MAX_REFERRERS) {
            if entry.media_type != OCI_IMAGE_MEDIA_TYPE
                || !u64::try_from(entry.size).is_ok_and(|size| size <= max_bytes)
            {
                continue;
            }
            let by = reference.clone_with_digest(entry.digest.clone());
            let manifest = self
                .request("its referrer could not be pulled", || {
                    client.manifest(&by, OCI_IMAGE_MEDIA_TYPE, max_bytes)
                })
                .await?;
            if sha256_of(&manifest) != entry.digest {
                return Err(PullError::refused(format!(
                    "its referrer {} does not have that digest (tampered or corrupted)",
                    entry.digest
                )));
            }
            let Ok(parsed) = serde_json::from_slice::<OciImageManifest>(&manifest) else {
                continue;
            };
            let about_it = parsed
                .subject
                .as_ref()
                .is_some_and(|subject| subject.digest == digest);
            let [layer] = &parsed.layers[..] else {
                continue;
            };
            if !about_it || layer.media_type != BUNDLE_MEDIA_TYPE {
                continue;
            }
            if !u64::try_from(layer.size).is_ok_and(|size| size <= max_bytes) {
                return Err(PullError::refused(format!(
                    "its Sigstore bundle {} is larger than {} (--max-registry-document-size)",
                    layer.digest,
                    format_size(max_bytes)
                )));
            }
            let bundle = match store.read(&layer.digest, max_bytes) {
                Some(bundle) => bundle,
                None => {
                    let bundle = self.pull_layer(&by, layer).await?;
                    self.keep(&layer.digest, &bundle)?;
                    bundle
                }
            };
            digests.push(layer.digest.clone());
            bundles.push(bundle);
        }
        // None is not kept: a bundle attached later is found at the next start.
        if !digests.is_empty() {
            store
                .write_bundles(digest, &digests)
                .map_err(|err| PullError::refused(format!("cannot keep its bundles: {err:#}")))?;
        }
        Ok(bundles)
    }

    /// The entries listing the bundle referrers of the manifest `digest`:
    /// from the referrers API, else (it answers 404) from the image index at
    /// the referrers tag schema's tag `sha256-<hex>`, of which only the
    /// entries of the bundle's artifact type are kept; none if neither is
    /// there.
    async fn bundle_referrers(
        &self,
        reference: &Reference,
        digest: &str,
    ) -> Result<Vec<ImageIndexEntry>, PullError> {
        let max_bytes = self.max_document_bytes();
        let client = self.client()?;
        let subject = reference.clone_with_digest(digest.to_owned());
        let what = "its referrers could not be listed";
        let parse = |index: &[u8]| {
            serde_json::from_slice::<OciImageIndex>(index)
                .map(|index| index.manifests)
                .map_err(|err| {
                    PullError::refused(format!("{what}: it is not an OCI image index: {err}"))
                })
        };
        let listed = self
            .request(what, || {
                client.referrers(&subject, BUNDLE_MEDIA_TYPE, max_bytes)
            })
            .await?;
        if let Some(index) = listed {
            return parse(&index);
        }
        let tag = Reference::with_tag(
            reference.registry().to_owned(),
            reference.repository().to_owned(),
            digest.replacen(':', "-", 1),
        );
        let tagged = self
            .request(what, || {
                client.manifest_if_any(&tag, OCI_IMAGE_INDEX_MEDIA_TYPE, max_bytes)
            })
            .await?;
        let Some(index) = tagged else {
            return Ok(Vec::new());
        };
        let mut entries = parse(&index)?;
        entries.retain(|entry| entry.artifact_type.as_deref() == Some(BUNDLE_MEDIA_TYPE));
        Ok(entries)
    }
}
