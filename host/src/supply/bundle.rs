//! Sigstore bundles (`application/vnd.dev.sigstore.bundle.v0.3+json`) of
//! pulled components, as `cosign sign --new-bundle-format` attaches them to
//! a manifest as OCI referrers, verified offline before a component loads.
//!
//! A bundle's message signature signs the component's manifest (its
//! `messageDigest` is the manifest digest). It is accepted if:
//! - the digest it signs is the component's manifest digest;
//! - signed with a key: the signature of the manifest verifies with a
//!   trusted public key (`--cosign-key`);
//! - keyless: it holds a transparency log entry of a trusted log (by log
//!   id) whose signed entry timestamp verifies with the log's key, and
//!   whose `hashedrekord` body names this digest, this signature and this
//!   certificate; the certificate chains to a trusted Fulcio authority, for
//!   code signing, at the time the log integrated the entry; it names a
//!   trusted identity (OIDC issuer extension and subject alternative name,
//!   exact); and the signature of the manifest verifies with its key.
//!
//! Not checked: the log's inclusion proof and checkpoint (the signed entry
//! timestamp is the log's promise, as cosign's offline verification takes
//! it), the certificate's SCTs, timestamp authorities.

use anyhow::Context as _;
use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
use rustls::pki_types::CertificateDer;
use serde::Deserialize;

use super::digest::hex;
use super::signature::TrustedKeys;
use super::trust::{KeylessTrust, RawBytes, decode};

/// The media type (and OCI artifact type) of a Sigstore bundle v0.3.
pub(super) const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The keys and identities a component's bundle may be signed by.
#[derive(Debug, Clone)]
pub(super) struct Trust {
    /// Trusted public keys (`--cosign-key`).
    pub(super) keys: Option<TrustedKeys>,
    /// Trusted root and identities (`--sigstore-trusted-root`).
    pub(super) keyless: Option<KeylessTrust>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Bundle {
    media_type: String,
    verification_material: Material,
    message_signature: Option<MessageSignature>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Material {
    certificate: Option<RawBytes>,
    #[serde(default)]
    tlog_entries: Vec<TlogEntry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageSignature {
    message_digest: MessageDigest,
    signature: String,
}

#[derive(Deserialize)]
struct MessageDigest {
    algorithm: String,
    digest: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TlogEntry {
    log_index: String,
    log_id: LogId,
    integrated_time: String,
    inclusion_promise: Option<InclusionPromise>,
    canonicalized_body: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct LogId {
    key_id: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InclusionPromise {
    signed_entry_timestamp: String,
}

/// The `hashedrekord` body of a log entry: what the log recorded.
#[derive(Deserialize)]
struct HashedRekord {
    kind: String,
    spec: HashedRekordSpec,
}

#[derive(Deserialize)]
struct HashedRekordSpec {
    data: HashedRekordData,
    signature: HashedRekordSignature,
}

#[derive(Deserialize)]
struct HashedRekordData {
    hash: HashedRekordHash,
}

#[derive(Deserialize)]
struct HashedRekordHash {
    value: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HashedRekordSignature {
    content: String,
    public_key: HashedRekordKey,
}

#[derive(Deserialize)]
struct HashedRekordKey {
    content: String,
}

impl Trust {
    /// Checks that one of `bundles` signs the manifest `manifest` (whose
    /// digest is `digest`) by a trusted key or identity; the error says
    /// why none does (the reason of the first bundle).
    pub(super) fn check(
        &self,
        digest: &str,
        manifest: &[u8],
        bundles: &[Vec<u8>],
    ) -> Result<(), String> {
        let mut first = None;
        for bundle in bundles {
            match self.check_one(digest, manifest, bundle) {
                Ok(()) => return Ok(()),
                Err(reason) => {
                    first.get_or_insert(reason);
                }
            }
        }
        Err(first.unwrap_or_else(|| {
            "it is unsigned: it has no Sigstore bundle (an OCI referrer of its manifest)".to_owned()
        }))
    }

    fn check_one(&self, digest: &str, manifest: &[u8], bundle: &[u8]) -> Result<(), String> {
        let bundle: Bundle = serde_json::from_slice(bundle)
            .map_err(|err| format!("its Sigstore bundle cannot be read: {err}"))?;
        if bundle.media_type != BUNDLE_MEDIA_TYPE {
            return Err(format!(
                "its Sigstore bundle is `{}`, not `{BUNDLE_MEDIA_TYPE}`",
                bundle.media_type
            ));
        }
        let message = bundle.message_signature.ok_or_else(|| {
            "its Sigstore bundle holds no message signature (a DSSE attestation is not a signature of the component)"
                .to_owned()
        })?;
        let signed = match (
            message.message_digest.algorithm.as_str(),
            decode(&message.message_digest.digest),
        ) {
            ("SHA2_256", Ok(bytes)) => format!("sha256:{}", hex(&bytes)),
            _ => return Err("its Sigstore bundle's message digest is not SHA-256".to_owned()),
        };
        if signed != digest {
            return Err(format!(
                "its Sigstore bundle signs another digest ({signed}), not {digest}"
            ));
        }
        let signature = decode(&message.signature)
            .map_err(|_| "its Sigstore bundle's signature is not base64".to_owned())?;
        match bundle.verification_material.certificate {
            None => {
                let keys = self.keys.as_ref().ok_or_else(|| {
                    "its Sigstore bundle is signed with a key, and no --cosign-key is trusted"
                        .to_owned()
                })?;
                if keys.verifies_bytes(manifest, &signature) {
                    Ok(())
                } else {
                    Err(
                        "its Sigstore bundle is not signed by a trusted key (--cosign-key)"
                            .to_owned(),
                    )
                }
            }
            Some(certificate) => {
                let keyless = self.keyless.as_ref().ok_or_else(|| {
                    "its Sigstore bundle is keyless, and no --sigstore-trusted-root is given"
                        .to_owned()
                })?;
                let leaf = certificate
                    .decode()
                    .map_err(|_| "its signing certificate is not base64".to_owned())?;
                let time = logged_at(
                    keyless,
                    &bundle.verification_material.tlog_entries,
                    digest,
                    &signature,
                    &leaf,
                )?;
                keyless.check_certificate(&leaf, time)?;
                let der = CertificateDer::from(leaf.as_slice());
                let cert = webpki::EndEntityCert::try_from(&der)
                    .map_err(|err| format!("its signing certificate cannot be read: {err}"))?;
                let spki = cert.subject_public_key_info();
                let point = spki
                    .as_ref()
                    .strip_prefix(&super::signature::P256_SPKI_PREFIX[..])
                    .ok_or_else(|| "its signing key is not ECDSA P-256".to_owned())?;
                UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point)
                    .verify(manifest, &signature)
                    .map_err(|_| {
                        "its Sigstore bundle's signature does not verify with its certificate"
                            .to_owned()
                    })
            }
        }
    }
}

/// The time (seconds since the epoch) a trusted log recorded this
/// signature by this certificate over `digest`, from the first entry of
/// `entries` whose signed entry timestamp verifies with its log's key.
fn logged_at(
    trust: &KeylessTrust,
    entries: &[TlogEntry],
    digest: &str,
    signature: &[u8],
    leaf: &[u8],
) -> Result<u64, String> {
    let mut reason = "its Sigstore bundle holds no transparency log entry".to_owned();
    for entry in entries {
        match logged_entry(trust, entry, digest, signature, leaf) {
            Ok(time) => return Ok(time),
            Err(err) => reason = format!("its transparency log entry is refused: {err:#}"),
        }
    }
    Err(reason)
}

fn logged_entry(
    trust: &KeylessTrust,
    entry: &TlogEntry,
    digest: &str,
    signature: &[u8],
    leaf: &[u8],
) -> anyhow::Result<u64> {
    let key_id = decode(&entry.log_id.key_id)?;
    let log = trust
        .log(&key_id)
        .context("it is not from a trusted transparency log")?;
    let time: u64 = entry.integrated_time.parse().context("integrated time")?;
    let index: u64 = entry.log_index.parse().context("log index")?;
    let promise = entry
        .inclusion_promise
        .as_ref()
        .context("it has no signed entry timestamp")?;
    // The log signs the canonical JSON (keys in order) of these four.
    let payload = format!(
        r#"{{"body":"{}","integratedTime":{time},"logID":"{}","logIndex":{index}}}"#,
        entry.canonicalized_body,
        hex(&key_id)
    );
    if !log.verifies(
        payload.as_bytes(),
        &decode(&promise.signed_entry_timestamp)?,
    ) {
        anyhow::bail!("its signed entry timestamp does not verify with the log's key");
    }
    let body: HashedRekord = serde_json::from_slice(&decode(&entry.canonicalized_body)?)
        .context("its body is not a hashedrekord")?;
    anyhow::ensure!(body.kind == "hashedrekord", "its body is a `{}`", body.kind);
    anyhow::ensure!(
        Some(body.spec.data.hash.value.as_str()) == digest.strip_prefix("sha256:"),
        "it records another digest (sha256:{})",
        body.spec.data.hash.value
    );
    anyhow::ensure!(
        decode(&body.spec.signature.content)? == signature,
        "it records another signature"
    );
    let pem = String::from_utf8(decode(&body.spec.signature.public_key.content)?)
        .context("its certificate is not PEM")?;
    anyhow::ensure!(
        pem_der(&pem).as_deref() == Some(leaf),
        "it records another certificate"
    );
    Ok(time)
}

/// The DER body of the first PEM block of `pem`.
fn pem_der(pem: &str) -> Option<Vec<u8>> {
    let body: String = pem
        .lines()
        .skip_while(|line| !line.starts_with("-----BEGIN"))
        .skip(1)
        .take_while(|line| !line.starts_with("-----END"))
        .collect();
    base64::engine::general_purpose::STANDARD.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::supply::digest::sha256_of;
    use crate::supply::trust::Identity;
    use airlock_e2e::oci_registry::CosignKey;
    use airlock_e2e::sigstore::{TestSigstore, sign_with_key};

    const ISSUER: &str = "https://token.actions.example.com";
    const SUBJECT: &str =
        "https://example.com/org/repo/.github/workflows/release.yml@refs/heads/main";

    fn keyless(sigstore: &TestSigstore) -> Trust {
        let root = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(root.path(), sigstore.trusted_root()).unwrap();
        let identity: Identity = format!("{ISSUER} {SUBJECT}").parse().unwrap();
        Trust {
            keys: None,
            keyless: Some(KeylessTrust::read(root.path(), vec![identity]).unwrap()),
        }
    }

    #[test]
    fn a_keyless_bundle_passes_only_for_its_digest_a_trusted_identity_and_the_trusted_root() {
        let sigstore = TestSigstore::new();
        let trust = keyless(&sigstore);
        let manifest = br#"{"schemaVersion":2}"#;
        let digest = sha256_of(manifest);
        let check = |bundle: Vec<u8>| trust.check(&digest, manifest, &[bundle]);
        assert_eq!(
            check(sigstore.sign_keyless(manifest, ISSUER, SUBJECT)),
            Ok(())
        );
        let refused = |bundle: Vec<u8>| check(bundle).unwrap_err();
        assert!(
            refused(sigstore.sign_keyless(manifest, ISSUER, "mallory@example.com"))
                .contains("mallory@example.com (issuer https://token.actions.example.com) is not a trusted identity")
        );
        assert!(
            refused(sigstore.sign_keyless(manifest, "https://other.example.com", SUBJECT))
                .contains("not a trusted identity")
        );
        assert!(
            refused(
                sigstore
                    .other_authority()
                    .sign_keyless(manifest, ISSUER, SUBJECT)
            )
            .contains("does not chain to a trusted Fulcio certificate authority")
        );
        assert!(
            refused(TestSigstore::new().sign_keyless(manifest, ISSUER, SUBJECT))
                .contains("not from a trusted transparency log")
        );
        assert!(
            refused(sigstore.sign_keyless(b"another manifest", ISSUER, SUBJECT))
                .contains("signs another digest")
        );
        // The signature of another manifest, in a bundle naming this digest.
        let mut swapped: serde_json::Value =
            serde_json::from_slice(&sigstore.sign_keyless(manifest, ISSUER, SUBJECT)).unwrap();
        let other: serde_json::Value =
            serde_json::from_slice(&sigstore.sign_keyless(b"x", ISSUER, SUBJECT)).unwrap();
        swapped["messageSignature"]["signature"] = other["messageSignature"]["signature"].clone();
        assert!(
            refused(serde_json::to_vec(&swapped).unwrap()).contains("records another signature")
        );
        // A log entry whose signed entry timestamp is not the log's.
        let mut forged: serde_json::Value =
            serde_json::from_slice(&sigstore.sign_keyless(manifest, ISSUER, SUBJECT)).unwrap();
        forged["verificationMaterial"]["tlogEntries"][0]["integratedTime"] = "1".into();
        assert!(
            refused(serde_json::to_vec(&forged).unwrap())
                .contains("signed entry timestamp does not verify")
        );
        assert!(
            trust
                .check(&digest, manifest, &[])
                .unwrap_err()
                .contains("no Sigstore bundle")
        );
    }

    #[test]
    fn a_bundle_signed_with_a_trusted_key_passes() {
        let key = CosignKey::generate();
        let public = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(public.path(), key.public_pem()).unwrap();
        let trust = Trust {
            keys: Some(TrustedKeys::read(&[public.path().to_owned()]).unwrap()),
            keyless: None,
        };
        let manifest = br#"{"schemaVersion":2}"#;
        let digest = sha256_of(manifest);
        assert_eq!(
            trust.check(&digest, manifest, &[sign_with_key(manifest, &key)]),
            Ok(())
        );
        assert!(
            trust
                .check(
                    &digest,
                    manifest,
                    &[sign_with_key(manifest, &CosignKey::generate())]
                )
                .unwrap_err()
                .contains("not signed by a trusted key")
        );
        let keyless = TestSigstore::new().sign_keyless(manifest, ISSUER, SUBJECT);
        assert!(
            trust
                .check(&digest, manifest, &[keyless])
                .unwrap_err()
                .contains("no --sigstore-trusted-root")
        );
    }
}
