//! `airlock audit verify`: whether audit files are whole.
//!
//! The files are read in the order given (the oldest first, as rotation
//! names them: `audit.jsonl.2 audit.jsonl.1 audit.jsonl`), as one stream of
//! records per host. Each record must hash to its `hash`
//! ([`record_hash`]), follow the last record of its host by `seq` and link
//! to it by `prev`, and no record may link to one given after it (files
//! given out of order, whose older chain would otherwise pass for a new
//! one); each checkpoint must carry the audit key's signature of
//! the head. A chain may start (`seq` 0 after [`GENESIS`]) anywhere, and the
//! first record seen of a host may go on from a file not given (rotation
//! deletes the oldest). A `gap` record is an honest gap: the writer lost
//! records and says so; it is reported, not a break.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::chain::{GENESIS, checkpoint_signed, record_hash};
use super::key::AuditKey;

/// Why the chain breaks at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Break {
    /// Not a record: not a JSON object with `host`, `seq`, `prev`, `hash`.
    Unreadable,
    /// The record does not hash to its `hash`: it was edited.
    HashMismatch,
    /// `seq` jumps ahead: records before it are missing.
    SequenceGap {
        /// The `seq` that should have come.
        expected: u64,
        /// The `seq` found.
        found: u64,
    },
    /// `seq` goes back: records were reordered (or repeated).
    OutOfOrder {
        /// The `seq` that should have come.
        expected: u64,
        /// The `seq` found.
        found: u64,
    },
    /// The record links (`prev`) to a record given after it: the files
    /// were given out of order (the oldest comes first) or records moved.
    LinksForward {
        /// The file of the record it links to.
        file: String,
        /// Its 1-based line.
        line: usize,
    },
    /// The right `seq`, but `prev` is not the hash of the record before.
    PrevMismatch,
    /// A checkpoint whose signature is not the audit key's.
    BadCheckpoint,
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Break::Unreadable => write!(f, "not an audit record"),
            Break::HashMismatch => write!(f, "hash mismatch: the record was changed"),
            Break::SequenceGap { expected, found } => write!(
                f,
                "sequence gap: seq {found} where {expected} should come (records are missing)"
            ),
            Break::OutOfOrder { expected, found } => write!(
                f,
                "out of order: seq {found} where {expected} should come (records were moved)"
            ),
            Break::LinksForward { file, line } => write!(
                f,
                "out of order: it goes on from {file}:{line}, given after it (give the files oldest first)"
            ),
            Break::PrevMismatch => write!(
                f,
                "prev mismatch: the record does not link to the one before"
            ),
            Break::BadCheckpoint => write!(
                f,
                "bad checkpoint: its signature is not the audit key's over the chain head"
            ),
        }
    }
}

/// A break, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file, as given.
    pub file: String,
    /// Its 1-based line.
    pub line: usize,
    /// Why.
    pub why: Break,
}

/// What one host's records came to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostReport {
    /// Its records.
    pub records: u64,
    /// Its checkpoints whose signature was checked and is good.
    pub checkpoints: u64,
    /// Records lost, as its `gap` records say.
    pub lost: u64,
    /// Records after its last good checkpoint (not signed yet).
    pub unsigned_tail: u64,
    /// Whether its first record starts a chain (else it goes on from a file
    /// not given).
    pub starts_here: bool,
    /// Where a new chain of it starts after records of an earlier one (file
    /// and line): a run whose trail could not be continued (standard
    /// output, a lost file).
    pub restarts: Vec<(String, usize)>,
}

/// What verifying some files found.
#[derive(Debug, Default)]
pub struct Report {
    /// Each host that wrote records, by host id.
    pub hosts: BTreeMap<String, HostReport>,
    /// Every break, in file order.
    pub breaks: Vec<Found>,
    /// Checkpoints not checked for want of the key.
    pub unchecked_checkpoints: u64,
}

impl Report {
    /// Whether no break was found.
    pub fn whole(&self) -> bool {
        self.breaks.is_empty()
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for found in &self.breaks {
            writeln!(f, "{}:{}: {}", found.file, found.line, found.why)?;
        }
        for (host, report) in &self.hosts {
            write!(
                f,
                "host {host}: {} records, {} signed checkpoints",
                report.records, report.checkpoints
            )?;
            if !report.starts_here {
                write!(f, ", goes on from an earlier file")?;
            }
            if report.lost > 0 {
                write!(f, ", {} records lost (gap records)", report.lost)?;
            }
            for (file, line) in &report.restarts {
                write!(f, ", a new chain starts at {file}:{line}")?;
            }
            if report.unsigned_tail > 0 {
                write!(
                    f,
                    ", {} records after the last checkpoint",
                    report.unsigned_tail
                )?;
            }
            writeln!(f)?;
        }
        if self.unchecked_checkpoints > 0 {
            writeln!(
                f,
                "{} checkpoints not checked: give the audit key (--audit-key-file or the state keys)",
                self.unchecked_checkpoints
            )?;
        }
        if self.whole() {
            writeln!(f, "whole: every chain is intact")
        } else {
            writeln!(f, "BROKEN: {} breaks", self.breaks.len())
        }
    }
}

/// Verifies `files` (name and text, oldest first) with `key`, if given.
pub fn verify<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
    key: Option<&AuditKey>,
) -> Report {
    let mut lines = Vec::new();
    for (file, text) in files {
        for (index, line) in text.lines().enumerate() {
            lines.push((file, index + 1, parse(line)));
        }
    }
    // Where each record of each host is, to tell a record that is missing
    // from one that comes later than it should.
    let mut positions: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    for (at, (_, _, parsed)) in lines.iter().enumerate() {
        if let Some(record) = parsed {
            positions
                .entry((record.host.as_str(), record.seq))
                .or_default()
                .push(at);
        }
    }
    let comes_later = |host: &str, seq: u64, at: usize| {
        positions
            .get(&(host, seq))
            .is_some_and(|found| found.iter().any(|&p| p > at))
    };
    // Where each record is by its hash, to tell a record whose predecessor
    // is given after it (a chain links across hosts too: a restarted
    // process goes on from the chain its file holds).
    let mut by_hash: BTreeMap<&str, usize> = BTreeMap::new();
    for (at, (_, _, parsed)) in lines.iter().enumerate() {
        if let Some(record) = parsed {
            by_hash.entry(record.hash.as_str()).or_insert(at);
        }
    }
    let given_later = |prev: &str, at: usize| {
        by_hash
            .get(prev)
            .filter(|&&p| p > at)
            .map(|&p| Break::LinksForward {
                file: lines[p].0.to_owned(),
                line: lines[p].1,
            })
    };
    let mut report = Report::default();
    let mut heads: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    for (at, (file, line, parsed)) in lines.iter().enumerate() {
        let found = |why| Found {
            file: (*file).to_owned(),
            line: *line,
            why,
        };
        let Some(record) = parsed else {
            report.breaks.push(found(Break::Unreadable));
            continue;
        };
        let host = record.host.as_str();
        let host_report = report.hosts.entry(host.to_owned()).or_default();
        let starts = record.seq == 0 && record.prev == GENESIS;
        let head = heads.get(host).copied();
        if head.is_none() {
            host_report.starts_here = starts;
        }
        host_report.records += 1;
        host_report.unsigned_tail += 1;
        let (seq, members) = (record.seq, &record.members);
        let mut moved_back = false;
        let edited = record_hash(&record.prev, members) != record.hash;
        let why = if edited {
            Some(Break::HashMismatch)
        } else {
            match head {
                None => None,
                Some(_) if starts => {
                    host_report.restarts.push(((*file).to_owned(), *line));
                    None
                }
                Some((next, _)) if seq > next && comes_later(host, next, at) => {
                    Some(Break::OutOfOrder {
                        expected: next,
                        found: seq,
                    })
                }
                Some((next, _)) if seq > next => Some(Break::SequenceGap {
                    expected: next,
                    found: seq,
                }),
                Some((next, _)) if seq < next => {
                    moved_back = true;
                    Some(Break::OutOfOrder {
                        expected: next,
                        found: seq,
                    })
                }
                Some((_, last)) if last != record.prev => Some(Break::PrevMismatch),
                Some(_) => None,
            }
        };
        let why = why.or_else(|| given_later(&record.prev, at));
        let event = members.get("event").and_then(Value::as_str);
        let why = why.or_else(|| match (event, key) {
            (Some("checkpoint"), Some(key)) if !checkpoint_signed(key, members) => {
                Some(Break::BadCheckpoint)
            }
            (Some("checkpoint"), Some(_)) => {
                host_report.checkpoints += 1;
                host_report.unsigned_tail = 0;
                None
            }
            (Some("checkpoint"), None) => {
                report.unchecked_checkpoints += 1;
                None
            }
            _ => None,
        });
        if event == Some("gap") {
            host_report.lost += members.get("lost").and_then(Value::as_u64).unwrap_or(0);
        }
        if let Some(why) = why {
            report.breaks.push(found(why));
        }
        // Go on from this record, so that one break is reported once; a
        // record moved back is not where the chain stands.
        // An edited record's `seq` may be the edit: it stands where the
        // chain expected it.
        let seq = match head {
            Some((next, _)) if edited => next,
            _ => seq,
        };
        if !moved_back {
            heads.insert(host, (seq.saturating_add(1), record.hash.as_str()));
        }
    }
    report
}

/// What every record has, and all its members.
struct Parsed {
    host: String,
    seq: u64,
    prev: String,
    hash: String,
    members: Map<String, Value>,
}

/// A record's `host`, `seq`, `prev`, `hash` and all its members.
fn parse(line: &str) -> Option<Parsed> {
    let members: Map<String, Value> = serde_json::from_str(line).ok()?;
    Some(Parsed {
        host: members.get("host")?.as_str()?.to_owned(),
        seq: members.get("seq")?.as_u64()?,
        prev: members.get("prev")?.as_str()?.to_owned(),
        hash: members.get("hash")?.as_str()?.to_owned(),
        members,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::chain::{Chain, Head};
    use super::*;

    fn key() -> AuditKey {
        AuditKey::new(&[9; 32])
    }

    /// A chain of host `h`: a start, `calls` calls, a checkpoint.
    fn lines(calls: usize) -> Vec<String> {
        let mut chain = Chain::new("h".into(), Head::genesis());
        let event = |name: &str, n: usize| {
            let Value::Object(map) = json!({"event": name, "n": n}) else {
                unreachable!()
            };
            map
        };
        let mut lines = vec![chain.link(event("start", 0))];
        for n in 0..calls {
            lines.push(chain.link(event("call", n)));
        }
        lines.push(chain.checkpoint(&key(), "t".into()));
        lines
    }

    fn check(lines: &[String]) -> Report {
        let text = lines.concat();
        verify([("audit.jsonl", text.as_str())], Some(&key()))
    }

    #[test]
    fn an_untouched_chain_is_whole() {
        let report = check(&lines(3));
        assert!(report.whole(), "{report}");
        let host = &report.hosts["h"];
        assert_eq!((host.records, host.checkpoints), (5, 1));
        assert!(host.starts_here);
        assert_eq!(host.unsigned_tail, 0);
        assert!(report.to_string().contains("whole"), "{report}");
    }

    #[test]
    fn a_removed_line_is_a_sequence_gap() {
        let mut lines = lines(3);
        lines.remove(2);
        let report = check(&lines);
        assert_eq!(
            report.breaks,
            vec![Found {
                file: "audit.jsonl".into(),
                line: 3,
                why: Break::SequenceGap {
                    expected: 2,
                    found: 3
                }
            }]
        );
    }

    #[test]
    fn an_edited_line_is_a_hash_mismatch() {
        let mut lines = lines(3);
        lines[2] = lines[2].replace(r#""n":1"#, r#""n":7"#);
        let report = check(&lines);
        assert_eq!(report.breaks.len(), 1, "{report}");
        assert_eq!(
            (report.breaks[0].line, &report.breaks[0].why),
            (3, &Break::HashMismatch)
        );
    }

    #[test]
    fn an_edited_sequence_number_is_one_break() {
        let mut lines = lines(3);
        lines[2] = lines[2].replace(r#""seq":2"#, r#""seq":9"#);
        let report = check(&lines);
        assert_eq!(report.breaks.len(), 1, "{report}");
        assert_eq!(report.breaks[0].why, Break::HashMismatch);
    }

    #[test]
    fn reordered_lines_are_out_of_order() {
        let mut lines = lines(3);
        lines.swap(2, 3);
        let report = check(&lines);
        let breaks: Vec<(usize, &Break)> = report.breaks.iter().map(|b| (b.line, &b.why)).collect();
        assert_eq!(
            breaks,
            vec![
                (
                    3,
                    &Break::OutOfOrder {
                        expected: 2,
                        found: 3
                    }
                ),
                (
                    4,
                    &Break::OutOfOrder {
                        expected: 4,
                        found: 2
                    }
                ),
            ],
            "{report}"
        );
    }

    #[test]
    fn a_rewritten_chain_fails_at_its_checkpoint() {
        // Whoever rewrites the chain (edit, then hash again) cannot sign.
        let mut lines = lines(2);
        let mut chain = Chain::new("h".into(), Head::genesis());
        let forged: Vec<String> = lines
            .iter()
            .map(|line| {
                let mut record: Map<String, Value> = serde_json::from_str(line).unwrap();
                for member in ["host", "seq", "prev", "hash"] {
                    record.remove(member);
                }
                if record.get("n") == Some(&json!(1)) {
                    record.insert("n".into(), json!(5));
                }
                chain.link(record)
            })
            .collect();
        lines = forged;
        let report = check(&lines);
        assert_eq!(report.breaks.len(), 1, "{report}");
        assert_eq!(report.breaks[0].why, Break::BadCheckpoint);
        let unkeyed = verify([("a", lines.concat().as_str())], None);
        assert!(unkeyed.whole());
        assert_eq!(unkeyed.unchecked_checkpoints, 1);
    }

    #[test]
    fn a_chain_goes_on_across_files_in_order() {
        let lines = lines(4);
        let (old, new) = (lines[..3].concat(), lines[3..].concat());
        let report = verify([("a.1", old.as_str()), ("a", new.as_str())], Some(&key()));
        assert!(report.whole(), "{report}");
        assert!(report.hosts["h"].starts_here);
        let newest_only = verify([("a", new.as_str())], Some(&key()));
        assert!(newest_only.whole(), "{newest_only}");
        assert!(!newest_only.hosts["h"].starts_here);
    }

    #[test]
    fn files_given_out_of_order_break_where_the_newer_goes_on_from_the_older() {
        let lines = lines(4);
        let (old, new) = (lines[..3].concat(), lines[3..].concat());
        let swapped = verify([("a", new.as_str()), ("a.1", old.as_str())], Some(&key()));
        assert_eq!(
            swapped.breaks,
            vec![Found {
                file: "a".into(),
                line: 1,
                why: Break::LinksForward {
                    file: "a.1".into(),
                    line: 3
                }
            }],
            "{swapped}"
        );
        assert!(
            swapped
                .to_string()
                .contains("a:1: out of order: it goes on from a.1:3"),
            "{swapped}"
        );
    }

    #[test]
    fn a_new_host_starting_a_new_chain_is_whole_in_any_order() {
        let first = lines(2).concat();
        let mut chain = Chain::new("g".into(), Head::genesis());
        let mut members = Map::new();
        members.insert("event".into(), json!("start"));
        let second = chain.link(members);
        for files in [
            [("a", first.as_str()), ("b", second.as_str())],
            [("b", second.as_str()), ("a", first.as_str())],
        ] {
            let report = verify(files, Some(&key()));
            assert!(report.whole(), "{report}");
            assert!(report.hosts["g"].starts_here && report.hosts["h"].starts_here);
        }
    }

    #[test]
    fn a_line_that_is_no_record_is_unreadable() {
        let mut lines = lines(1);
        lines.insert(1, "hello\n".into());
        let report = check(&lines);
        assert_eq!(report.breaks[0].why, Break::Unreadable);
    }
}
