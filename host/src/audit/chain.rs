//! The hash chain of audit records, and their encoding.
//!
//! A record is one JSON object on one line, in canonical JSON (members
//! sorted, no whitespace; see [`canonical_json`]), with these members
//! besides its event's own:
//!
//! - `host`: the host that wrote it; each host writes its own chain.
//! - `seq`: its place in the chain, from 0, one more each record.
//! - `prev`: the `hash` of the record before it ([`GENESIS`] for the first
//!   record of a chain).
//! - `hash`: SHA-256 over the 32 bytes of `prev` followed by the record's
//!   canonical bytes without `hash`, in hex.
//!
//! A `checkpoint` record also holds `mac`: HMAC-SHA256 with the audit key
//! over its canonical bytes without `mac` and `hash` (which hold `prev`,
//! the head of the chain it signs), and `key`, the key's id. Editing,
//! removing or reordering records breaks the hashes; rewriting the whole
//! chain after an edit needs the audit key to sign its checkpoints again.

use ring::digest::{Context, SHA256};
use serde_json::{Map, Value, json};

use super::key::AuditKey;
use super::unhex;
use crate::sealing::canonical_json;

/// The `prev` of the first record of a chain.
pub const GENESIS: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Where a chain stands: what the next record links to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The `seq` of the next record.
    pub seq: u64,
    /// The `hash` of the last record ([`GENESIS`] before the first).
    pub hash: String,
}

impl Head {
    /// The head of a chain with no record yet.
    pub fn genesis() -> Head {
        Head {
            seq: 0,
            hash: GENESIS.to_owned(),
        }
    }

    /// The head after `line`, the last record written, if it is a record of
    /// `host`'s chain.
    pub fn after(line: &str, host: &str) -> Option<Head> {
        let record: Map<String, Value> = serde_json::from_str(line).ok()?;
        if record.get("host")?.as_str()? != host {
            return None;
        }
        Some(Head {
            seq: record.get("seq")?.as_u64()?.checked_add(1)?,
            hash: record.get("hash")?.as_str()?.to_owned(),
        })
    }
}

/// A host's chain, as its writer extends it.
#[derive(Debug)]
pub struct Chain {
    host: String,
    head: Head,
}

impl Chain {
    /// `host`'s chain, going on from `head`.
    pub fn new(host: String, head: Head) -> Chain {
        Chain { host, head }
    }

    /// Where the chain stands.
    pub fn head(&self) -> &Head {
        &self.head
    }

    /// The host whose chain it is.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// Goes back to `head`: the records linked after it were not written,
    /// and the next record links to it instead.
    pub fn rewind(&mut self, head: Head) {
        self.head = head;
    }

    /// `record` linked into the chain: one line, newline included.
    pub fn link(&mut self, mut record: Map<String, Value>) -> String {
        self.stamp(&mut record);
        self.seal(record)
    }

    /// A checkpoint signing the head of the chain with `key`.
    pub fn checkpoint(&mut self, key: &AuditKey, time: String) -> String {
        let mut record = Map::new();
        record.insert("event".into(), json!("checkpoint"));
        record.insert("time".into(), json!(time));
        record.insert("key".into(), json!(key.id()));
        self.stamp(&mut record);
        let mac = key.sign(&canonical_json(&Value::Object(record.clone())));
        record.insert("mac".into(), json!(mac));
        self.seal(record)
    }

    fn stamp(&self, record: &mut Map<String, Value>) {
        record.insert("host".into(), json!(self.host));
        record.insert("seq".into(), json!(self.head.seq));
        record.insert("prev".into(), json!(self.head.hash));
    }

    fn seal(&mut self, mut record: Map<String, Value>) -> String {
        let hash = record_hash(&self.head.hash, &record);
        record.insert("hash".into(), json!(hash));
        self.head = Head {
            seq: self.head.seq + 1,
            hash,
        };
        let mut line = canonical_json(&Value::Object(record));
        line.push(b'\n');
        // Canonical JSON of valid strings is UTF-8.
        String::from_utf8(line).unwrap_or_default()
    }
}

/// The `hash` of `record` (without its `hash` member) after `prev` (hex).
pub fn record_hash(prev: &str, record: &Map<String, Value>) -> String {
    let mut context = Context::new(&SHA256);
    context.update(&unhex(prev).unwrap_or_default());
    let mut bytes = Vec::new();
    let without: Map<String, Value> = record
        .iter()
        .filter(|(key, _)| key.as_str() != "hash")
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    bytes.extend_from_slice(&canonical_json(&Value::Object(without)));
    context.update(&bytes);
    crate::hex::encode(context.finish().as_ref())
}

/// Whether `checkpoint`'s `mac` is `key`'s over its other members.
pub fn checkpoint_signed(key: &AuditKey, checkpoint: &Map<String, Value>) -> bool {
    let Some(mac) = checkpoint.get("mac").and_then(Value::as_str) else {
        return false;
    };
    let signed: Map<String, Value> = checkpoint
        .iter()
        .filter(|(name, _)| !matches!(name.as_str(), "mac" | "hash"))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    key.verify(&canonical_json(&Value::Object(signed)), mac)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(name: &str) -> Map<String, Value> {
        let Value::Object(map) = json!({"event": name, "zeta": 1, "alpha": "a"}) else {
            unreachable!()
        };
        map
    }

    #[test]
    fn records_link_to_the_one_before_and_are_canonical() {
        let mut chain = Chain::new("h1".into(), Head::genesis());
        let first = chain.link(event("start"));
        let second = chain.link(event("call"));
        assert!(first.ends_with('\n') && first.matches('\n').count() == 1);
        let a: Map<String, Value> = serde_json::from_str(&first).unwrap();
        let b: Map<String, Value> = serde_json::from_str(&second).unwrap();
        assert_eq!(a["prev"], GENESIS);
        assert_eq!((a["seq"].as_u64(), b["seq"].as_u64()), (Some(0), Some(1)));
        assert_eq!(b["prev"], a["hash"]);
        assert_eq!(a["hash"], record_hash(GENESIS, &a));
        assert!(first.starts_with(r#"{"alpha":"a","event":"start","hash":"#));
        assert_eq!(Head::after(&second, "h1"), Some(chain.head().clone()));
        assert_eq!(Head::after(&second, "h2"), None);
    }

    #[test]
    fn any_change_of_a_record_changes_its_hash() {
        let mut record = event("call");
        record.insert("prev".into(), json!(GENESIS));
        let hash = record_hash(GENESIS, &record);
        record.insert("hash".into(), json!(hash));
        assert_eq!(
            record_hash(GENESIS, &record),
            hash,
            "hash itself is left out"
        );
        record.insert("zeta".into(), json!(2));
        assert_ne!(record_hash(GENESIS, &record), hash);
        record.insert("zeta".into(), json!(1));
        let other_prev = "11".repeat(32);
        assert_ne!(record_hash(&other_prev, &record), hash);
    }

    #[test]
    fn a_checkpoint_is_signed_with_the_key_and_covers_the_head() {
        let key = AuditKey::new(&[3; 32]);
        let mut chain = Chain::new("h".into(), Head::genesis());
        chain.link(event("start"));
        let head = chain.head().hash.clone();
        let line = chain.checkpoint(&key, "2026-01-01T00:00:00.000Z".into());
        let mut checkpoint: Map<String, Value> = serde_json::from_str(&line).unwrap();
        assert_eq!(checkpoint["prev"], json!(head));
        assert_eq!(checkpoint["key"], json!(key.id()));
        assert!(checkpoint_signed(&key, &checkpoint));
        assert!(!checkpoint_signed(&AuditKey::new(&[4; 32]), &checkpoint));
        checkpoint.insert("prev".into(), json!("22".repeat(32)));
        assert!(!checkpoint_signed(&key, &checkpoint), "another head");
    }
}
