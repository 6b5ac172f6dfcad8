//! The audit key: it signs the chain's checkpoints and keys the digest of a
//! call's arguments. From `--audit-key-file`, or derived from the state keys
//! ([`KeyRing::derive`] under [`DERIVATION_LABEL`]), so every process of a
//! fleet that shares the state keys has the same audit key.

use std::path::Path;

use anyhow::Context as _;
use ring::digest::{SHA256, digest};
use ring::hmac;
use serde_json::Value;

use crate::sealing::{KeyRing, canonical_arguments};

/// The HKDF label the audit key is derived from the state keys under.
pub const DERIVATION_LABEL: &str = "airlock/audit";

/// The audit key, and its public id (the first 8 bytes of SHA-256 of the
/// key, in hex) that checkpoints name it by.
#[derive(Clone)]
pub struct AuditKey {
    key: hmac::Key,
    id: String,
}

impl std::fmt::Debug for AuditKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuditKey").field("id", &self.id).finish()
    }
}

impl AuditKey {
    /// A key of these bytes.
    pub fn new(bytes: &[u8]) -> AuditKey {
        AuditKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, bytes),
            id: crate::hex::encode(&digest(&SHA256, bytes).as_ref()[..8]),
        }
    }

    /// The key derived from the state keys (from their first key).
    pub fn derived(keys: &KeyRing) -> AuditKey {
        AuditKey::new(&keys.derive(DERIVATION_LABEL))
    }

    /// The key of a file of one key as `airlock keygen` prints it (32 bytes
    /// in base64), the same format as a state key.
    pub fn read(path: &Path) -> anyhow::Result<AuditKey> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the audit key file {}", path.display()))?;
        let ring = KeyRing::parse(&text)
            .with_context(|| format!("invalid audit key file {}", path.display()))?;
        anyhow::ensure!(
            ring.key_ids().len() == 1,
            "the audit key file {} must hold one key",
            path.display()
        );
        Ok(AuditKey::new(&ring.derive(DERIVATION_LABEL)))
    }

    /// The key's public id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// HMAC-SHA256 of `bytes`, in hex.
    pub fn sign(&self, bytes: &[u8]) -> String {
        crate::hex::encode(hmac::sign(&self.key, bytes).as_ref())
    }

    /// Whether `mac` (hex) is the HMAC of `bytes`.
    pub fn verify(&self, bytes: &[u8], mac: &str) -> bool {
        super::unhex(mac).is_some_and(|mac| hmac::verify(&self.key, bytes, &mac).is_ok())
    }

    /// The keyed digest of a call's arguments: HMAC-SHA256 over the
    /// canonical JSON the state binding digests, so whoever holds the key
    /// and an input can tell whether a record is about it, and nobody else
    /// can learn anything of the arguments.
    pub fn digest_arguments(&self, arguments: &Value) -> String {
        self.sign(&canonical_arguments(arguments))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_argument_digest_is_keyed_and_canonical() {
        let key = AuditKey::new(&[7; 32]);
        let a = key.digest_arguments(&json!({"b": 1, "a": "x"}));
        assert_eq!(a, key.digest_arguments(&json!({"a": "x", "b": 1})));
        assert_eq!(a.len(), 64);
        assert_ne!(a, key.digest_arguments(&json!({"a": "y", "b": 1})));
        assert_ne!(
            a,
            AuditKey::new(&[8; 32]).digest_arguments(&json!({"a": "x", "b": 1}))
        );
        assert_eq!(
            key.digest_arguments(&Value::Null),
            key.digest_arguments(&json!({}))
        );
    }

    #[test]
    fn a_fleet_sharing_state_keys_derives_one_audit_key() {
        let ring = KeyRing::from_keys(&[[1; 32], [2; 32]]).unwrap();
        let same = KeyRing::from_keys(&[[1; 32]]).unwrap();
        let other = KeyRing::from_keys(&[[2; 32]]).unwrap();
        assert_eq!(AuditKey::derived(&ring).id(), AuditKey::derived(&same).id());
        assert_ne!(
            AuditKey::derived(&ring).id(),
            AuditKey::derived(&other).id()
        );
        let mac = AuditKey::derived(&ring).sign(b"head");
        assert!(AuditKey::derived(&same).verify(b"head", &mac));
        assert!(!AuditKey::derived(&other).verify(b"head", &mac));
    }
}
