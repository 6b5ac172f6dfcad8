//! The witness of a host's trail: its latest signed checkpoint, kept
//! outside the trail (`--audit-witness FILE`, on another volume), so that
//! a trail cut back or put back to an older copy can be told from a whole
//! one. A hash chain cannot prove its own tail: whoever can write the trail
//! can remove its last records, checkpoints included, and what is left is
//! a good chain. The witness is what the trail must reach.
//!
//! The writer hands each checkpoint to the witness once the trail holds
//! it, and at start compares the witness with the trail it goes on from: a
//! trail behind its witness is told in the `start` record
//! (`behind_witness`). `airlock audit verify --witness FILE` checks that the
//! trail holds the witnessed checkpoint.

use std::io;
use std::path::PathBuf;

use anyhow::Context as _;
use serde_json::{Value, json};

use super::chain::{Head, checkpoint_signed};
use super::key::AuditKey;
use super::verify::{Parsed, parse};

/// Where a host's latest checkpoint is kept: a file holding its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Witness {
    file: PathBuf,
}

impl Witness {
    /// A witness in `file` (created at the first checkpoint).
    pub fn file(file: PathBuf) -> Witness {
        Witness { file }
    }

    /// The file.
    pub fn path(&self) -> &PathBuf {
        &self.file
    }

    /// Keeps `checkpoint` (one record, without its newline) as the latest:
    /// written beside the file and renamed over it, so the witness is
    /// always one whole checkpoint.
    pub fn keep(&self, checkpoint: &str) -> io::Result<()> {
        let mut temporary = self.file.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        std::fs::write(&temporary, format!("{checkpoint}\n"))?;
        std::fs::rename(&temporary, &self.file)
    }

    /// The checkpoint it holds, if any.
    pub fn read(&self) -> anyhow::Result<Option<Parsed>> {
        let bytes = match std::fs::read(&self.file) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => {
                return Err(error)
                    .with_context(|| format!("cannot read the witness {}", self.file.display()));
            }
        };
        let line = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
        let witnessed = parse(line)
            .ok()
            .filter(|record| record.event() == Some("checkpoint"))
            .with_context(|| {
                format!(
                    "the witness {} holds no audit checkpoint",
                    self.file.display()
                )
            })?;
        Ok(Some(witnessed))
    }

    /// The head this witness holds for `host`, signed with `key`, when the
    /// chain at `head` has not reached it: what the `start` record of a
    /// trail behind its witness says (`seq` and `hash` of the witnessed
    /// checkpoint). A witness that cannot be read, of another host or
    /// another key is logged and passed over.
    pub fn ahead_of(&self, host: &str, head: &Head, key: &AuditKey) -> Option<Value> {
        let file = self.file.display();
        let witnessed = match self.read() {
            Ok(witnessed) => witnessed?,
            Err(error) => {
                tracing::warn!("{error:#}; the trail is not compared with it");
                return None;
            }
        };
        if witnessed.host != host {
            tracing::warn!(
                witness = %file,
                "the audit witness holds the head of host {}, not of this host ({host}): give each host its own",
                witnessed.host
            );
            return None;
        }
        if !checkpoint_signed(key, &witnessed.members) {
            tracing::warn!(witness = %file, "the audit witness is not signed with this audit key: passed over");
            return None;
        }
        if witnessed.seq < head.seq {
            return None;
        }
        tracing::error!(
            witness = %file,
            witnessed = witnessed.seq,
            next = head.seq,
            "the audit trail is behind its witness: records were removed or an older copy put back \
             (the start record says so; `airlock audit verify` reports it)"
        );
        Some(json!({"seq": witnessed.seq, "hash": witnessed.hash}))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Map;

    use super::super::chain::Chain;
    use super::*;

    #[test]
    fn a_witness_keeps_the_latest_checkpoint_and_tells_a_trail_behind_it() {
        let dir = tempfile::tempdir().unwrap();
        let witness = Witness::file(dir.path().join("witness"));
        let key = AuditKey::new(&[1; 32]);
        assert!(witness.read().unwrap().is_none(), "none before");
        let mut chain = Chain::new("h".into(), Head::genesis());
        let mut start = Map::new();
        start.insert("event".into(), json!("start"));
        chain.link(start);
        let behind = chain.head().clone();
        let checkpoint = chain.checkpoint(&key, "t".into());
        witness.keep(checkpoint.trim_end()).unwrap();
        let read = witness.read().unwrap().unwrap();
        assert_eq!((read.host.as_str(), read.seq), ("h", 1));

        assert_eq!(witness.ahead_of("h", chain.head(), &key), None, "reached");
        assert_eq!(
            witness.ahead_of("h", &behind, &key),
            Some(json!({"seq": 1, "hash": read.hash}))
        );
        assert_eq!(witness.ahead_of("g", &behind, &key), None, "another host's");
        let other = AuditKey::new(&[2; 32]);
        assert_eq!(
            witness.ahead_of("h", &behind, &other),
            None,
            "another key's"
        );

        std::fs::write(witness.path(), "{\"seq\":1}\n").unwrap();
        assert!(witness.read().is_err(), "not a checkpoint");
        assert_eq!(witness.ahead_of("h", &behind, &key), None);
    }
}
