//! The keyless trust policy: a Sigstore trusted root (`trusted_root.json`:
//! the Fulcio certificate authorities and the Rekor transparency log keys)
//! and the signer identities (OIDC issuer and certificate subject, exact)
//! whose signatures are trusted.

use std::path::Path;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
use rustls::pki_types::{CertificateDer, UnixTime};
use serde::Deserialize;
use webpki::{EndEntityCert, KeyUsage};

use super::certificate::signer;

/// The DER of the extended key usage `id-kp-codeSigning`, which Fulcio
/// signing certificates carry.
const CODE_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x03];

/// A signer trusted for keyless signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The OIDC issuer, e.g. `https://token.actions.githubusercontent.com`.
    pub issuer: String,
    /// The certificate's subject alternative name (email or URI), exact.
    pub subject: String,
}

impl std::str::FromStr for Identity {
    type Err = String;

    /// `"<issuer> <subject>"`.
    fn from_str(text: &str) -> Result<Identity, String> {
        match text.trim().split_once(char::is_whitespace) {
            Some((issuer, subject)) if !subject.trim().is_empty() => Ok(Identity {
                issuer: issuer.to_owned(),
                subject: subject.trim().to_owned(),
            }),
            _ => Err(format!(
                "`{text}`: expected `<OIDC issuer> <certificate subject>`"
            )),
        }
    }
}

/// A Fulcio certificate authority: its root and intermediates (DER).
#[derive(Debug, Clone)]
struct Authority {
    root: Vec<u8>,
    intermediates: Vec<Vec<u8>>,
}

/// A transparency log: the id bundles name it by, and its P-256 key.
#[derive(Debug, Clone)]
pub(super) struct Log {
    /// The log id (SHA-256 of its public key).
    pub(super) key_id: Vec<u8>,
    point: Vec<u8>,
}

impl Log {
    /// Whether `signature` (DER) of `message` verifies with the log's key.
    pub(super) fn verifies(&self, message: &[u8], signature: &[u8]) -> bool {
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, &self.point)
            .verify(message, signature)
            .is_ok()
    }
}

/// The trusted root and the trusted identities.
#[derive(Debug, Clone)]
pub struct KeylessTrust {
    authorities: Vec<Authority>,
    logs: Vec<Log>,
    identities: Vec<Identity>,
}

impl KeylessTrust {
    /// Reads the trusted root `path` (Sigstore `trusted_root.json`); trusts
    /// signatures of `identities`.
    pub fn read(path: &Path, identities: Vec<Identity>) -> anyhow::Result<KeylessTrust> {
        let text = std::fs::read(path)
            .with_context(|| format!("cannot read the trusted root {}", path.display()))?;
        let trust = KeylessTrust::parse(&text, identities)
            .with_context(|| format!("trusted root {}", path.display()))?;
        Ok(trust)
    }

    fn parse(text: &[u8], identities: Vec<Identity>) -> anyhow::Result<KeylessTrust> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Root {
            #[serde(default)]
            tlogs: Vec<RootLog>,
            #[serde(default)]
            certificate_authorities: Vec<RootAuthority>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct RootLog {
            public_key: RawBytes,
            log_id: KeyId,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct KeyId {
            key_id: String,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct RootAuthority {
            cert_chain: Chain,
        }
        #[derive(Deserialize)]
        struct Chain {
            certificates: Vec<RawBytes>,
        }
        let root: Root = serde_json::from_slice(text).context("not a Sigstore trusted root")?;
        let mut authorities = Vec::new();
        for authority in root.certificate_authorities {
            let mut chain = authority
                .cert_chain
                .certificates
                .iter()
                .map(RawBytes::decode)
                .collect::<anyhow::Result<Vec<_>>>()?;
            // Leaf-most first, the root last.
            let Some(root) = chain.pop() else {
                bail!("a certificate authority has no certificate");
            };
            webpki::anchor_from_trusted_cert(&CertificateDer::from(root.as_slice()))
                .map_err(|err| anyhow::anyhow!("a Fulcio root certificate is unusable: {err}"))?;
            authorities.push(Authority {
                root,
                intermediates: chain,
            });
        }
        let mut logs = Vec::new();
        for log in root.tlogs {
            let spki = log.public_key.decode()?;
            let Some(point) = spki.strip_prefix(&super::signature::P256_SPKI_PREFIX[..]) else {
                bail!("a transparency log key is not ECDSA P-256");
            };
            logs.push(Log {
                key_id: decode(&log.log_id.key_id)?,
                point: point.to_vec(),
            });
        }
        if authorities.is_empty() || logs.is_empty() {
            bail!("it names no Fulcio certificate authority or no transparency log");
        }
        Ok(KeylessTrust {
            authorities,
            logs,
            identities,
        })
    }

    /// The trusted log whose id is `key_id`.
    pub(super) fn log(&self, key_id: &[u8]) -> Option<&Log> {
        self.logs.iter().find(|log| log.key_id == key_id)
    }

    /// Checks that the signing certificate `leaf` (DER) chains to a trusted
    /// Fulcio authority at `time` (seconds since the epoch, as the log
    /// recorded the signature), for code signing, and names a trusted
    /// identity; the error says which does not hold.
    pub(super) fn check_certificate(&self, leaf: &[u8], time: u64) -> Result<(), String> {
        let der = CertificateDer::from(leaf);
        let cert = EndEntityCert::try_from(&der)
            .map_err(|err| format!("its signing certificate cannot be read: {err}"))?;
        let at = UnixTime::since_unix_epoch(std::time::Duration::from_secs(time));
        let chained = self.authorities.iter().any(|authority| {
            let root = CertificateDer::from(authority.root.as_slice());
            let Ok(anchor) = webpki::anchor_from_trusted_cert(&root) else {
                return false;
            };
            let intermediates: Vec<CertificateDer> = authority
                .intermediates
                .iter()
                .map(|der| CertificateDer::from(der.as_slice()))
                .collect();
            cert.verify_for_usage(
                webpki::ALL_VERIFICATION_ALGS,
                &[anchor],
                &intermediates,
                at,
                KeyUsage::required(CODE_SIGNING),
                None,
                None,
            )
            .is_ok()
        });
        if !chained {
            return Err(
                "its signing certificate does not chain to a trusted Fulcio certificate authority at its signing time (--sigstore-trusted-root)"
                    .to_owned(),
            );
        }
        let signer =
            signer(leaf).ok_or_else(|| "its signing certificate cannot be read".to_owned())?;
        let trusted = self.identities.iter().any(|identity| {
            signer.issuer.as_deref() == Some(identity.issuer.as_str())
                && signer.subjects.contains(&identity.subject)
        });
        if trusted {
            Ok(())
        } else {
            Err(format!(
                "its signer {} (issuer {}) is not a trusted identity (--sigstore-identity)",
                signer.subjects.join(", "),
                signer.issuer.as_deref().unwrap_or("none")
            ))
        }
    }
}

/// A base64 `rawBytes` field of the Sigstore formats.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawBytes {
    raw_bytes: String,
}

impl RawBytes {
    /// The bytes.
    pub(super) fn decode(&self) -> anyhow::Result<Vec<u8>> {
        decode(&self.raw_bytes)
    }
}

/// Decodes standard base64.
pub(super) fn decode(text: &str) -> anyhow::Result<Vec<u8>> {
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .context("not base64")
}
