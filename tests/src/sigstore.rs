//! A Sigstore of the tests' own: a Fulcio-like certificate authority and a
//! Rekor-like transparency log key, the `trusted_root.json` naming them,
//! and Sigstore bundles (v0.3) signing a manifest keyless (a short-lived
//! certificate with Fulcio's issuer extensions and an email or URI subject,
//! and a `hashedrekord` log entry with its signed entry timestamp) or with
//! a cosign key.

use base64::Engine as _;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair as _};

use crate::oci_registry::{CosignKey, sha256};

/// The media type of a Sigstore bundle v0.3.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.dev.sigstore.bundle.v0.3+json";

/// The DER SubjectPublicKeyInfo prefix of a P-256 key, before its point.
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A certificate authority and a transparency log key.
pub struct TestSigstore {
    ca_key: rcgen::KeyPair,
    ca: rcgen::Certificate,
    log_pkcs8: Vec<u8>,
}

impl TestSigstore {
    /// A new authority and a new log.
    pub fn new() -> TestSigstore {
        let rng = ring::rand::SystemRandom::new();
        let log_pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &rng)
            .unwrap()
            .as_ref()
            .to_vec();
        TestSigstore::with_log(log_pkcs8)
    }

    /// Another authority recorded by the same log: its certificates are
    /// logged like the trusted ones, but do not chain to this root.
    pub fn other_authority(&self) -> TestSigstore {
        TestSigstore::with_log(self.log_pkcs8.clone())
    }

    fn with_log(log_pkcs8: Vec<u8>) -> TestSigstore {
        let ca_key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "sigstore-test");
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let ca = params.self_signed(&ca_key).unwrap();
        TestSigstore {
            ca_key,
            ca,
            log_pkcs8,
        }
    }

    fn log(&self) -> EcdsaKeyPair {
        EcdsaKeyPair::from_pkcs8(
            &ECDSA_P256_SHA256_ASN1_SIGNING,
            &self.log_pkcs8,
            &ring::rand::SystemRandom::new(),
        )
        .unwrap()
    }

    fn log_spki(&self) -> Vec<u8> {
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(self.log().public_key().as_ref());
        spki
    }

    /// The `trusted_root.json` naming this authority and this log.
    pub fn trusted_root(&self) -> String {
        let spki = self.log_spki();
        let key_id = ring::digest::digest(&ring::digest::SHA256, &spki);
        serde_json::json!({
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [{
                "baseUrl": "https://rekor.sigstore.test",
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64(&spki),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2021-01-12T11:53:27Z"},
                },
                "logId": {"keyId": b64(key_id.as_ref())},
            }],
            "certificateAuthorities": [{
                "subject": {"organization": "sigstore.test", "commonName": "sigstore-test"},
                "uri": "https://fulcio.sigstore.test",
                "certChain": {"certificates": [{"rawBytes": b64(self.ca.der())}]},
                "validFor": {"start": "2021-01-12T11:53:27Z"},
            }],
            "ctlogs": [],
            "timestampAuthorities": [],
        })
        .to_string()
    }

    /// A Fulcio-like signing certificate (DER) for `subject` (an email, or
    /// a URI if it has `://`) vouched for by the OIDC `issuer`, valid ten
    /// minutes from a minute ago, and its key (PKCS#8).
    pub fn certificate(&self, issuer: &str, subject: &str) -> (Vec<u8>, Vec<u8>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.subject_alt_names = vec![if subject.contains("://") {
            rcgen::SanType::URI(subject.try_into().unwrap())
        } else {
            rcgen::SanType::Rfc822Name(subject.try_into().unwrap())
        }];
        params.key_usages = vec![rcgen::KeyUsagePurpose::DigitalSignature];
        params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::CodeSigning];
        let start = time::OffsetDateTime::now_utc() - time::Duration::minutes(1);
        params.not_before = start;
        params.not_after = start + time::Duration::minutes(10);
        // 1.3.6.1.4.1.57264.1.1: the issuer, raw; .1.8: the same, a DER UTF8String.
        let mut utf8 = vec![0x0c, u8::try_from(issuer.len()).unwrap()];
        utf8.extend_from_slice(issuer.as_bytes());
        params.custom_extensions = vec![
            rcgen::CustomExtension::from_oid_content(
                &[1, 3, 6, 1, 4, 1, 57264, 1, 1],
                issuer.as_bytes().to_vec(),
            ),
            rcgen::CustomExtension::from_oid_content(&[1, 3, 6, 1, 4, 1, 57264, 1, 8], utf8),
        ];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.der().to_vec(), key.serialize_der())
    }

    /// A keyless bundle signing `manifest` by `subject` of `issuer`.
    pub fn sign_keyless(&self, manifest: &[u8], issuer: &str, subject: &str) -> Vec<u8> {
        let (cert, key) = self.certificate(issuer, subject);
        let rng = ring::rand::SystemRandom::new();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &key, &rng).unwrap();
        let signature = key.sign(&rng, manifest).unwrap().as_ref().to_vec();
        let digest = sha256(manifest);
        let hex_digest = digest.strip_prefix("sha256:").unwrap();
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            b64(&cert)
        );
        let body = serde_json::json!({
            "apiVersion": "0.0.1",
            "kind": "hashedrekord",
            "spec": {
                "data": {"hash": {"algorithm": "sha256", "value": hex_digest}},
                "signature": {"content": b64(&signature), "publicKey": {"content": b64(pem.as_bytes())}},
            },
        })
        .to_string();
        let body = b64(body.as_bytes());
        let key_id = ring::digest::digest(&ring::digest::SHA256, &self.log_spki());
        let time = now();
        let index = 7;
        let promise = format!(
            r#"{{"body":"{body}","integratedTime":{time},"logID":"{}","logIndex":{index}}}"#,
            hex(key_id.as_ref())
        );
        let set = self.log().sign(&rng, promise.as_bytes()).unwrap();
        // A one-entry tree: its root is the hash of the entry's leaf.
        let mut leaf = vec![0u8];
        leaf.extend_from_slice(
            &base64::engine::general_purpose::STANDARD
                .decode(&body)
                .unwrap(),
        );
        let root = ring::digest::digest(&ring::digest::SHA256, &leaf);
        serde_json::to_vec(&serde_json::json!({
            "mediaType": BUNDLE_MEDIA_TYPE,
            "verificationMaterial": {
                "certificate": {"rawBytes": b64(&cert)},
                "tlogEntries": [{
                    "logIndex": index.to_string(),
                    "logId": {"keyId": b64(key_id.as_ref())},
                    "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
                    "integratedTime": time.to_string(),
                    "inclusionPromise": {"signedEntryTimestamp": b64(set.as_ref())},
                    "inclusionProof": {
                        "logIndex": index.to_string(),
                        "rootHash": b64(root.as_ref()),
                        "treeSize": "1",
                        "hashes": [],
                    },
                    "canonicalizedBody": body,
                }],
                "timestampVerificationData": {},
            },
            "messageSignature": {
                "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&sha256_bytes(manifest))},
                "signature": b64(&signature),
            },
        }))
        .unwrap()
    }
}

impl Default for TestSigstore {
    fn default() -> TestSigstore {
        TestSigstore::new()
    }
}

/// A bundle signing `manifest` with the cosign key `key` (no log entry, as
/// `cosign sign --key --tlog-upload=false --new-bundle-format` makes it).
pub fn sign_with_key(manifest: &[u8], key: &CosignKey) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "mediaType": BUNDLE_MEDIA_TYPE,
        "verificationMaterial": {"publicKey": {"hint": "cosign.pub"}, "tlogEntries": []},
        "messageSignature": {
            "messageDigest": {"algorithm": "SHA2_256", "digest": b64(&sha256_bytes(manifest))},
            "signature": key.sign(manifest),
        },
    }))
    .unwrap()
}

fn sha256_bytes(bytes: &[u8]) -> Vec<u8> {
    ring::digest::digest(&ring::digest::SHA256, bytes)
        .as_ref()
        .to_vec()
}
