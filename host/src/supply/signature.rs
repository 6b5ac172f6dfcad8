//! Cosign signatures of pulled components, checked against trusted public
//! keys before a component loads.
//!
//! A cosign key-pair signature of the manifest `sha256:<hex>` lives in the
//! same repository under the tag `sha256-<hex>.sig`: a manifest whose
//! layers (`application/vnd.dev.cosign.simplesigning.v1+json`) each hold a
//! simple-signing payload naming the signed manifest digest, with the
//! base64 ECDSA P-256 signature of that payload in the layer's
//! `dev.cosignproject.cosign/signature` annotation. A component is served
//! if one layer's signature verifies with a trusted key (a PEM `PUBLIC KEY`,
//! as `cosign generate-key-pair` writes `cosign.pub`) and its payload names
//! the component's manifest digest. The signature manifest and payloads are
//! kept in the pull cache, so a locked component is verified again, offline,
//! at every start.

use std::path::Path;

use anyhow::{Context as _, bail};
use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_ASN1, UnparsedPublicKey};
use serde::Deserialize;

/// The media type of a cosign simple-signing payload layer.
pub(super) const PAYLOAD_MEDIA_TYPE: &str = "application/vnd.dev.cosign.simplesigning.v1+json";
/// The annotation of a payload layer holding its signature.
pub(super) const SIGNATURE_ANNOTATION: &str = "dev.cosignproject.cosign/signature";

/// The DER prefix of a P-256 public key's SubjectPublicKeyInfo, before its
/// 65-byte uncompressed point.
pub(super) const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// The public keys whose signatures are trusted.
#[derive(Debug, Clone)]
pub struct TrustedKeys(Vec<Vec<u8>>);

impl TrustedKeys {
    /// Reads each PEM public key file (ECDSA P-256, `cosign.pub`).
    pub fn read(paths: &[std::path::PathBuf]) -> anyhow::Result<TrustedKeys> {
        paths
            .iter()
            .map(|path| read_key(path).with_context(|| format!("public key {}", path.display())))
            .collect::<anyhow::Result<_>>()
            .map(TrustedKeys)
    }

    /// Whether `signature` (base64 DER) of `payload` verifies with one of
    /// the keys.
    fn verifies(&self, payload: &[u8], signature: &str) -> bool {
        let Ok(signature) = base64::engine::general_purpose::STANDARD.decode(signature.trim())
        else {
            return false;
        };
        self.verifies_bytes(payload, &signature)
    }

    /// Whether `signature` (DER) of `message` verifies with one of the keys.
    pub(super) fn verifies_bytes(&self, message: &[u8], signature: &[u8]) -> bool {
        self.0.iter().any(|point| {
            UnparsedPublicKey::new(&ECDSA_P256_SHA256_ASN1, point)
                .verify(message, signature)
                .is_ok()
        })
    }

    /// Checks that one of `layers` (each a payload and its signature)
    /// signs `digest` with a trusted key; the error says why none does.
    pub(super) fn check(&self, digest: &str, layers: &[(Vec<u8>, String)]) -> Result<(), String> {
        let mut other_digest = None;
        for (payload, signature) in layers {
            if !self.verifies(payload, signature) {
                continue;
            }
            match signed_digest(payload) {
                Some(signed) if signed == digest => return Ok(()),
                Some(signed) => other_digest = Some(signed),
                None => {}
            }
        }
        Err(match other_digest {
            Some(signed) => format!("its signature is for another digest ({signed}), not {digest}"),
            None if layers.is_empty() => {
                "its signature manifest holds no cosign signature".to_owned()
            }
            None => "it is not signed by a trusted key (--cosign-key)".to_owned(),
        })
    }
}

/// The uncompressed point of the P-256 public key in the PEM file `path`.
fn read_key(path: &Path) -> anyhow::Result<Vec<u8>> {
    let text = std::fs::read_to_string(path)?;
    let body: String = text
        .lines()
        .skip_while(|line| line.trim() != "-----BEGIN PUBLIC KEY-----")
        .skip(1)
        .take_while(|line| line.trim() != "-----END PUBLIC KEY-----")
        .collect();
    if body.is_empty() {
        bail!("not a PEM `PUBLIC KEY`");
    }
    let der = base64::engine::general_purpose::STANDARD
        .decode(body.trim())
        .context("its PEM body is not base64")?;
    match der.strip_prefix(&P256_SPKI_PREFIX[..]) {
        Some(point) if point.len() == 65 && point[0] == 4 => Ok(point.to_vec()),
        _ => bail!("not an ECDSA P-256 public key (the kind `cosign generate-key-pair` makes)"),
    }
}

/// The manifest digest a simple-signing payload signs.
fn signed_digest(payload: &[u8]) -> Option<String> {
    #[derive(Deserialize)]
    struct Payload {
        critical: Critical,
    }
    #[derive(Deserialize)]
    struct Critical {
        image: Image,
    }
    #[derive(Deserialize)]
    struct Image {
        #[serde(rename = "docker-manifest-digest")]
        digest: String,
    }
    serde_json::from_slice::<Payload>(payload)
        .ok()
        .map(|payload| payload.critical.image.digest)
}

/// The tag of the signature of the manifest `digest` (`sha256:<hex>`).
pub(super) fn signature_tag(digest: &str) -> String {
    digest.replacen(':', "-", 1) + ".sig"
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

    fn key_pair() -> (EcdsaKeyPair, tempfile::NamedTempFile) {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut der = P256_SPKI_PREFIX.to_vec();
        der.extend_from_slice(pair.public_key().as_ref());
        let pem = format!(
            "-----BEGIN PUBLIC KEY-----\n{}\n-----END PUBLIC KEY-----\n",
            base64::engine::general_purpose::STANDARD.encode(der)
        );
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), pem).unwrap();
        (pair, file)
    }

    fn signed(pair: &EcdsaKeyPair, digest: &str) -> (Vec<u8>, String) {
        let payload = format!(
            r#"{{"critical":{{"identity":{{"docker-reference":"r/x"}},"image":{{"docker-manifest-digest":"{digest}"}},"type":"cosign container image signature"}},"optional":null}}"#
        )
        .into_bytes();
        let rng = ring::rand::SystemRandom::new();
        let signature = pair.sign(&rng, &payload).unwrap();
        let signature = base64::engine::general_purpose::STANDARD.encode(signature.as_ref());
        (payload, signature)
    }

    #[test]
    fn only_a_trusted_key_signing_this_digest_is_accepted() {
        let (pair, public) = key_pair();
        let (other, _) = key_pair();
        let keys = TrustedKeys::read(&[public.path().to_owned()]).unwrap();
        let digest = format!("sha256:{}", "a".repeat(64));
        let elsewhere = format!("sha256:{}", "b".repeat(64));
        assert_eq!(keys.check(&digest, &[signed(&pair, &digest)]), Ok(()));
        assert!(
            keys.check(&digest, &[signed(&other, &digest)])
                .unwrap_err()
                .contains("trusted key")
        );
        assert!(
            keys.check(&digest, &[signed(&pair, &elsewhere)])
                .unwrap_err()
                .contains("another digest")
        );
        let (payload, _) = signed(&pair, &digest);
        let (_, signature) = signed(&pair, &elsewhere);
        assert!(
            keys.check(&digest, &[(payload, signature)]).is_err(),
            "a signature of another payload"
        );
        assert!(
            keys.check(&digest, &[])
                .unwrap_err()
                .contains("no cosign signature")
        );
    }

    #[test]
    fn a_key_that_is_not_p256_pem_is_refused() {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(
            file.path(),
            "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
        )
        .unwrap();
        assert!(
            format!(
                "{:#}",
                TrustedKeys::read(&[file.path().to_owned()]).unwrap_err()
            )
            .contains("P-256")
        );
        std::fs::write(file.path(), "hello").unwrap();
        assert!(
            format!(
                "{:#}",
                TrustedKeys::read(&[file.path().to_owned()]).unwrap_err()
            )
            .contains("PEM")
        );
    }
}
