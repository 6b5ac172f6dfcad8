//! `airlock audit verify`: whether audit files are whole.
//!
//! The files are read in the order given (the oldest first, as rotation
//! names them: `audit.jsonl.2 audit.jsonl.1 audit.jsonl`), as one stream of
//! records per host. Each line must be a record exactly as the writer
//! encodes it ([`parse`]: canonical JSON, so a duplicated member or another
//! encoding of the same values is refused); each record must hash to its
//! `hash` ([`record_hash`]), follow the last record of its host by `seq`
//! and link to it by `prev`, and no record may link to one given after it
//! (files given out of order, whose older chain would otherwise pass for a
//! new one); each checkpoint must carry the audit key's signature of the
//! head. A chain may start (`seq` 0 after [`GENESIS`]) anywhere, and the
//! first record seen of a host may go on from a file not given (rotation
//! deletes the oldest). A `gap` record is an honest gap: the writer lost
//! records and says so; it is reported, not a break.
//!
//! A hash chain cannot prove its own tail, so:
//! - a record is proven only when a checkpoint signed with the audit key
//!   comes after it in its chain; the records after a chain's last good
//!   checkpoint (a running host's latest, or a forged chain's every one)
//!   are reported as not signed, and the trail is not whole unless the
//!   caller accepts an unsigned tail ([`Report::allow_unsigned_tail`]);
//!   without the key nothing is proven;
//! - the files must reach every witnessed head (see [`super::witness`]):
//!   the checkpoints given as witnesses, and the ones a `start` record says
//!   its trail was behind.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use super::chain::{GENESIS, checkpoint_signed, record_hash};
use super::key::AuditKey;
use crate::sealing::canonical_json;

/// Why the chain breaks at a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Break {
    /// Not a record: not a JSON object with `host`, `seq`, `prev`, `hash`.
    Unreadable,
    /// A record, but not as the writer encodes it (a member twice, spaces,
    /// another encoding of a string or number): it was altered.
    NotCanonical,
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
    /// A witness whose checkpoint is not signed with the audit key.
    BadWitness,
    /// A witnessed checkpoint the files do not hold: the trail was cut
    /// back, or an older copy put back.
    NotReached {
        /// The host of the checkpoint.
        host: String,
        /// Its `seq`.
        seq: u64,
    },
    /// A `start` record whose host found its trail behind its witness, and
    /// the files do not hold the witnessed checkpoint either.
    BehindWitness {
        /// The `seq` of the witnessed checkpoint.
        seq: u64,
    },
}

impl fmt::Display for Break {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Break::Unreadable => write!(f, "not an audit record"),
            Break::NotCanonical => write!(
                f,
                "not as the writer encodes records (a member twice, spaces, another encoding): the record was changed"
            ),
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
            Break::BadWitness => write!(
                f,
                "bad witness: its checkpoint is not signed with the audit key"
            ),
            Break::NotReached { host, seq } => write!(
                f,
                "not reached: the files do not hold host {host}'s checkpoint seq {seq} (the trail was cut back or an older copy put back)"
            ),
            Break::BehindWitness { seq } => write!(
                f,
                "behind its witness: this run found the trail behind checkpoint seq {seq}, which the files do not hold (records were removed or an older copy put back)"
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
    /// Lines a failed write left torn, each followed by the `gap` record
    /// that says so.
    pub torn: u64,
    /// Records no good checkpoint comes after in their chain: not signed.
    pub unsigned: u64,
    /// Whether its first record starts a chain (else it goes on from a file
    /// not given).
    pub starts_here: bool,
    /// Where a new chain of it starts after records of an earlier one (file
    /// and line): a run whose trail could not be continued (standard
    /// output, a lost file).
    pub restarts: Vec<(String, usize)>,
    /// The `seq` of the witnessed checkpoint its records reach, if a
    /// witness of it was given.
    pub reaches_witness: Option<u64>,
}

/// What verifying some files found.
#[derive(Debug, Default)]
pub struct Report {
    /// Each host that wrote records, by host id.
    pub hosts: BTreeMap<String, HostReport>,
    /// Every break, in file order.
    pub breaks: Vec<Found>,
    /// Whether the audit key was given (else no checkpoint was checked).
    pub keyed: bool,
    /// Checkpoints not checked for want of the key.
    pub unchecked_checkpoints: u64,
    /// Whether records after the last good checkpoint of their chain are
    /// accepted (a running host's trail).
    pub allow_unsigned_tail: bool,
}

/// What a report comes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// No break, every record signed (or its unsigned tail accepted), every
    /// witnessed head reached.
    Whole,
    /// No break, but not every record is proven: records no good checkpoint
    /// covers, or no key to check the checkpoints with.
    Unproven,
    /// A break.
    Broken,
}

impl Report {
    /// Records not covered by a good checkpoint, of every host.
    pub fn unsigned(&self) -> u64 {
        self.hosts.values().map(|host| host.unsigned).sum()
    }

    /// What the report comes to.
    pub fn verdict(&self) -> Verdict {
        if !self.breaks.is_empty() {
            Verdict::Broken
        } else if !self.keyed || (self.unsigned() > 0 && !self.allow_unsigned_tail) {
            Verdict::Unproven
        } else {
            Verdict::Whole
        }
    }

    /// Whether it is [`Verdict::Whole`].
    pub fn whole(&self) -> bool {
        self.verdict() == Verdict::Whole
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
            if report.torn > 0 {
                write!(f, ", {} torn lines (gap records)", report.torn)?;
            }
            for (file, line) in &report.restarts {
                write!(f, ", a new chain starts at {file}:{line}")?;
            }
            if let Some(seq) = report.reaches_witness {
                write!(f, ", reaches its witness (checkpoint seq {seq})")?;
            }
            if report.unsigned > 0 {
                write!(
                    f,
                    ", {} records not signed (after the last good checkpoint of their chain)",
                    report.unsigned
                )?;
            }
            writeln!(f)?;
        }
        if !self.keyed {
            writeln!(
                f,
                "no audit key given (--audit-key-file or --state-keys-file): {} checkpoints not checked, \
                 so nothing is proven: whoever can write the files can write a chain",
                self.unchecked_checkpoints
            )?;
        }
        match self.verdict() {
            Verdict::Broken => writeln!(f, "BROKEN: {} breaks", self.breaks.len()),
            Verdict::Unproven if self.keyed => writeln!(
                f,
                "NOT PROVEN: {} records are not signed by a checkpoint (a running host's latest, or records \
                 anyone could have written); --allow-unsigned-tail accepts them",
                self.unsigned()
            ),
            Verdict::Unproven => writeln!(f, "NOT PROVEN: every chain is intact, but unsigned"),
            Verdict::Whole if self.unsigned() > 0 => writeln!(
                f,
                "whole: every chain is intact; {} records after the last checkpoint accepted unsigned \
                 (--allow-unsigned-tail)",
                self.unsigned()
            ),
            Verdict::Whole => writeln!(f, "whole: every chain is intact and signed"),
        }
    }
}

/// A record as the writer wrote it: what every record has, and all its
/// members.
#[derive(Debug, Clone)]
pub struct Parsed {
    /// The host whose chain it is in.
    pub host: String,
    /// Its place in that chain.
    pub seq: u64,
    /// The hash of the record before it.
    pub prev: String,
    /// Its own hash.
    pub hash: String,
    /// All its members.
    pub members: Map<String, Value>,
}

impl Parsed {
    /// Its `event`.
    pub fn event(&self) -> Option<&str> {
        self.members.get("event").and_then(Value::as_str)
    }
}

/// `line` (without its newline) as a record, if it is one exactly as the
/// writer encodes it: canonical JSON, the bytes its own members encode to,
/// so a duplicated member, spaces or another encoding of a value are
/// [`Break::NotCanonical`].
pub fn parse(line: &[u8]) -> Result<Parsed, Break> {
    match read(line)? {
        (record, true) => Ok(record),
        (_, false) => Err(Break::NotCanonical),
    }
}

/// `line` as a record, and whether it is canonical (see [`parse`]).
fn read(line: &[u8]) -> Result<(Parsed, bool), Break> {
    let Ok(Value::Object(members)) = serde_json::from_slice::<Value>(line) else {
        return Err(Break::Unreadable);
    };
    let members = Value::Object(members);
    let canonical = canonical_json(&members) == line;
    let Value::Object(members) = members else {
        unreachable!("an object above")
    };
    let text = |name: &str| {
        members
            .get(name)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or(Break::Unreadable)
    };
    let record = Parsed {
        host: text("host")?,
        seq: members
            .get("seq")
            .and_then(Value::as_u64)
            .ok_or(Break::Unreadable)?,
        prev: text("prev")?,
        hash: text("hash")?,
        members,
    };
    Ok((record, canonical))
}

/// The lines of `text`: each ends with a newline, but a last one without
/// (torn) is a line too.
fn lines_of(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let text = text.strip_suffix(b"\n").unwrap_or(text);
    text.split(|&byte| byte == b'\n')
        .filter(move |_| !text.is_empty())
}

/// Whether `record` is a `gap` record saying a write left a torn line.
fn tells_torn(record: &Parsed) -> bool {
    record.event() == Some("gap") && record.members.get("torn") == Some(&Value::Bool(true))
}

/// A witnessed checkpoint: where it was read (for the report), and itself.
pub type Witnessed<'a> = (&'a str, &'a Parsed);

/// Verifies `files` (name and bytes, oldest first) with `key`, if given,
/// and that they reach each of `witnesses`.
pub fn verify<'a>(
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    key: Option<&AuditKey>,
    witnesses: &[Witnessed<'_>],
) -> Report {
    let mut lines = Vec::new();
    for (file, text) in files {
        for (index, line) in lines_of(text).enumerate() {
            lines.push((file, index + 1, read(line)));
        }
    }
    // Where each record of each host is, to tell a record that is missing
    // from one that comes later than it should.
    let mut positions: BTreeMap<(&str, u64), Vec<usize>> = BTreeMap::new();
    for (at, (_, _, parsed)) in lines.iter().enumerate() {
        if let Ok((record, _)) = parsed {
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
    let holds = |host: &str, seq: u64, hash: &str| {
        positions.get(&(host, seq)).is_some_and(|found| {
            found.iter().any(|&p| {
                lines[p]
                    .2
                    .as_ref()
                    .is_ok_and(|(record, _)| record.hash == hash)
            })
        })
    };
    // Where each record is by its hash, to tell a record whose predecessor
    // is given after it (a chain links across hosts too: a restarted
    // process goes on from the chain its file holds).
    let mut by_hash: BTreeMap<&str, usize> = BTreeMap::new();
    for (at, (_, _, parsed)) in lines.iter().enumerate() {
        if let Ok((record, _)) = parsed {
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
    let mut report = Report {
        keyed: key.is_some(),
        ..Report::default()
    };
    let mut heads: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    // Records of each host's current chain after its last good checkpoint.
    let mut uncovered: BTreeMap<&str, u64> = BTreeMap::new();
    for (at, (file, line, parsed)) in lines.iter().enumerate() {
        let found = |why| Found {
            file: (*file).to_owned(),
            line: *line,
            why,
        };
        let (record, canonical) = match parsed {
            Ok((record, canonical)) => (record, *canonical),
            Err(Break::Unreadable)
                if lines.get(at + 1).is_some_and(|(next, _, parsed)| {
                    next == file && parsed.as_ref().is_ok_and(|(next, _)| tells_torn(next))
                }) =>
            {
                // A write failed midway; the gap record after it says so.
                continue;
            }
            Err(why) => {
                report.breaks.push(found(why.clone()));
                continue;
            }
        };
        let host = record.host.as_str();
        let host_report = report.hosts.entry(host.to_owned()).or_default();
        let uncovered = uncovered.entry(host).or_default();
        let starts = record.seq == 0 && record.prev == GENESIS;
        let head = heads.get(host).copied();
        if head.is_none() {
            host_report.starts_here = starts;
        }
        host_report.records += 1;
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
                    // The checkpoints of the new chain do not sign the old.
                    host_report.unsigned += std::mem::take(uncovered);
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
        *uncovered += 1;
        let why = if canonical {
            why.or_else(|| given_later(&record.prev, at))
        } else {
            Some(Break::NotCanonical)
        };
        let event = record.event();
        let why = why.or_else(|| match (event, key) {
            (Some("checkpoint"), Some(key)) if !checkpoint_signed(key, members) => {
                Some(Break::BadCheckpoint)
            }
            (Some("checkpoint"), Some(_)) => {
                host_report.checkpoints += 1;
                *uncovered = 0;
                None
            }
            (Some("checkpoint"), None) => {
                report.unchecked_checkpoints += 1;
                None
            }
            _ => None,
        });
        let why = why.or_else(|| {
            let behind = members
                .get("behind_witness")
                .filter(|_| event == Some("start"))?;
            let witnessed_seq = behind.get("seq").and_then(Value::as_u64).unwrap_or(0);
            let witnessed_hash = behind.get("hash").and_then(Value::as_str).unwrap_or("");
            (!holds(host, witnessed_seq, witnessed_hash))
                .then_some(Break::BehindWitness { seq: witnessed_seq })
        });
        if event == Some("gap") {
            host_report.lost += members.get("lost").and_then(Value::as_u64).unwrap_or(0);
            if tells_torn(record) {
                host_report.torn += 1;
            }
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
    for (host, uncovered) in uncovered {
        if let Some(host_report) = report.hosts.get_mut(host) {
            host_report.unsigned += uncovered;
        }
    }
    for (source, witnessed) in witnesses {
        let found = |why| Found {
            file: (*source).to_owned(),
            line: 1,
            why,
        };
        if key.is_some_and(|key| !checkpoint_signed(key, &witnessed.members)) {
            report.breaks.push(found(Break::BadWitness));
        } else if holds(&witnessed.host, witnessed.seq, &witnessed.hash) {
            report
                .hosts
                .entry(witnessed.host.clone())
                .or_default()
                .reaches_witness = Some(witnessed.seq);
        } else {
            report.breaks.push(found(Break::NotReached {
                host: witnessed.host.clone(),
                seq: witnessed.seq,
            }));
        }
    }
    report
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
        verify([("audit.jsonl", text.as_bytes())], Some(&key()), &[])
    }

    #[test]
    fn an_untouched_chain_is_whole() {
        let report = check(&lines(3));
        assert!(report.whole(), "{report}");
        let host = &report.hosts["h"];
        assert_eq!((host.records, host.checkpoints), (5, 1));
        assert!(host.starts_here);
        assert_eq!(host.unsigned, 0);
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
        let unkeyed = verify([("a", lines.concat().as_bytes())], None, &[]);
        assert!(unkeyed.breaks.is_empty(), "{unkeyed}");
        assert_eq!(
            unkeyed.verdict(),
            Verdict::Unproven,
            "without the key nothing is proven"
        );
        assert_eq!(unkeyed.unchecked_checkpoints, 1);
        assert!(
            unkeyed.to_string().contains("nothing is proven"),
            "{unkeyed}"
        );
    }

    #[test]
    fn a_chain_goes_on_across_files_in_order() {
        let lines = lines(4);
        let (old, new) = (lines[..3].concat(), lines[3..].concat());
        let report = verify(
            [("a.1", old.as_bytes()), ("a", new.as_bytes())],
            Some(&key()),
            &[],
        );
        assert!(report.whole(), "{report}");
        assert!(report.hosts["h"].starts_here);
        let newest_only = verify([("a", new.as_bytes())], Some(&key()), &[]);
        assert!(newest_only.whole(), "{newest_only}");
        assert!(!newest_only.hosts["h"].starts_here);
    }

    #[test]
    fn files_given_out_of_order_break_where_the_newer_goes_on_from_the_older() {
        let lines = lines(4);
        let (old, new) = (lines[..3].concat(), lines[3..].concat());
        let swapped = verify(
            [("a", new.as_bytes()), ("a.1", old.as_bytes())],
            Some(&key()),
            &[],
        );
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
            [("a", first.as_bytes()), ("b", second.as_bytes())],
            [("b", second.as_bytes()), ("a", first.as_bytes())],
        ] {
            let mut report = verify(files, Some(&key()), &[]);
            report.allow_unsigned_tail = true;
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

    #[test]
    fn a_chain_no_checkpoint_signs_is_not_proven_unless_its_tail_is_accepted() {
        // A second chain under a new host id: anyone with the file can
        // write one, hashes and all, but not sign it.
        let mut forged = Chain::new("intruder".into(), Head::genesis());
        let mut members = Map::new();
        members.insert("event".into(), json!("call"));
        members.insert("principal".into(), json!("token:alice"));
        let text = lines(2).concat() + &forged.link(members.clone()) + &forged.link(members);
        let mut report = verify([("a", text.as_bytes())], Some(&key()), &[]);
        assert!(report.breaks.is_empty(), "{report}");
        assert_eq!(report.verdict(), Verdict::Unproven, "{report}");
        assert_eq!(report.hosts["intruder"].unsigned, 2);
        assert_eq!(report.hosts["h"].unsigned, 0);
        assert!(report.to_string().contains("NOT PROVEN"), "{report}");
        report.allow_unsigned_tail = true;
        assert_eq!(report.verdict(), Verdict::Whole);
        assert!(
            report.to_string().contains("2 records not signed"),
            "reported all the same: {report}"
        );

        // A running host's trail: records after its last checkpoint.
        let mut running = lines(2);
        let head = Head::after(running.last().unwrap(), "h").unwrap();
        let mut chain = Chain::new("h".into(), head);
        let mut later = Map::new();
        later.insert("event".into(), json!("call"));
        running.push(chain.link(later));
        let report = check(&running);
        assert_eq!(report.hosts["h"].unsigned, 1, "{report}");
        assert_eq!(report.verdict(), Verdict::Unproven);
    }

    #[test]
    fn a_new_chain_does_not_sign_the_records_of_the_one_before() {
        // A run on standard output that stopped without its last
        // checkpoint, then a new run: the new chain's checkpoint signs only
        // its own records.
        let mut first = lines(1);
        first.pop();
        let text = first.concat() + &lines(1).concat();
        let report = verify([("a", text.as_bytes())], Some(&key()), &[]);
        assert!(report.breaks.is_empty(), "{report}");
        assert_eq!(report.hosts["h"].unsigned, 2, "{report}");
        assert_eq!(report.verdict(), Verdict::Unproven);
    }

    #[test]
    fn records_not_as_the_writer_encodes_them_are_refused() {
        let good = lines(1);
        let record = good[1].trim_end();
        let twice = record.replacen(
            r#"{"event":"call","#,
            r#"{"event":"call","event":"call","#,
            1,
        );
        let spaced = record.replacen(r#""event":"call""#, r#""event": "call""#, 1);
        let escaped = record.replacen(r#""event":"call""#, r#""event":"c\u0061ll""#, 1);
        let carriage = format!("{record}\r");
        for altered in [twice, spaced, escaped, carriage] {
            let mut lines = good.clone();
            lines[1] = format!("{altered}\n");
            let report = check(&lines);
            assert_eq!(
                report
                    .breaks
                    .iter()
                    .map(|b| (b.line, &b.why))
                    .collect::<Vec<_>>(),
                vec![(2, &Break::NotCanonical)],
                "{altered}: {report}"
            );
        }
        let mut lines = good.clone();
        lines[1] = record.replacen(r#""n":0"#, r#""n":0,"n":0"#, 1) + "\n";
        assert_eq!(check(&lines).breaks[0].why, Break::NotCanonical);
        let mut lines = good;
        lines.insert(1, "\n".into());
        assert_eq!(
            check(&lines).breaks[0].why,
            Break::Unreadable,
            "an empty line"
        );
    }

    /// The checkpoint at line `index` of `lines`, as a witness holds it.
    fn witness_of(lines: &[String], index: usize) -> Parsed {
        parse(lines[index].trim_end().as_bytes()).unwrap()
    }

    #[test]
    fn a_trail_cut_back_or_put_back_does_not_reach_its_witness() {
        // Two checkpoints; the witness holds the second.
        let mut chain = Chain::new("h".into(), Head::genesis());
        let mut event = Map::new();
        event.insert("event".into(), json!("call"));
        let mut lines = vec![chain.link(event.clone())];
        lines.push(chain.checkpoint(&key(), "t".into()));
        let older = lines.clone();
        lines.push(chain.link(event.clone()));
        lines.push(chain.checkpoint(&key(), "t".into()));
        let witness = witness_of(&lines, 3);
        let whole = lines.concat();
        let report = verify([("a", whole.as_bytes())], Some(&key()), &[("w", &witness)]);
        assert!(report.whole(), "{report}");
        assert_eq!(report.hosts["h"].reaches_witness, Some(3));

        // Cut back to the first checkpoint: a good chain, but short of the
        // witnessed head. An older copy put back is the same.
        let cut = older.concat();
        let alone = verify([("a", cut.as_bytes())], Some(&key()), &[]);
        assert!(alone.whole(), "without the witness nothing tells: {alone}");
        let report = verify([("a", cut.as_bytes())], Some(&key()), &[("w", &witness)]);
        assert_eq!(
            report.breaks,
            vec![Found {
                file: "w".into(),
                line: 1,
                why: Break::NotReached {
                    host: "h".into(),
                    seq: 3
                }
            }],
            "{report}"
        );
        // A chain forked after the cut, up to the same seq, does not reach
        // it either.
        let mut fork = Chain::new("h".into(), Head::after(&older[1], "h").unwrap());
        let mut other = event.clone();
        other.insert("principal".into(), json!("mallory"));
        let forked = cut + &fork.link(other) + &fork.link(event);
        let report = verify([("a", forked.as_bytes())], Some(&key()), &[("w", &witness)]);
        assert_eq!(report.verdict(), Verdict::Broken, "{report}");

        // A witness not signed with the key is no witness.
        let mut forged = witness.clone();
        forged.members.insert("time".into(), json!("u"));
        let report = verify([("a", whole.as_bytes())], Some(&key()), &[("w", &forged)]);
        assert_eq!(report.breaks[0].why, Break::BadWitness, "{report}");
    }

    #[test]
    fn a_start_behind_its_witness_breaks_unless_the_files_hold_the_witnessed_head() {
        let old = lines(1);
        let witnessed = witness_of(&old, 2);
        // The trail was lost; the next run starts a new chain and says
        // what its witness held.
        let mut chain = Chain::new("h".into(), Head::genesis());
        let mut start = Map::new();
        start.insert("event".into(), json!("start"));
        start.insert(
            "behind_witness".into(),
            json!({"seq": witnessed.seq, "hash": witnessed.hash}),
        );
        let new = chain.link(start) + &chain.checkpoint(&key(), "t".into());
        let report = verify([("new", new.as_bytes())], Some(&key()), &[]);
        assert_eq!(
            report
                .breaks
                .iter()
                .map(|b| (b.line, &b.why))
                .collect::<Vec<_>>(),
            vec![(1, &Break::BehindWitness { seq: 2 })],
            "{report}"
        );
        // The old files given too: the head was reached, the trail was
        // moved, not cut.
        let old = old.concat();
        let report = verify(
            [("old", old.as_bytes()), ("new", new.as_bytes())],
            Some(&key()),
            &[],
        );
        assert!(report.whole(), "{report}");
    }

    #[test]
    fn a_torn_line_is_honest_only_before_the_gap_record_that_tells_it() {
        let mut chain = Chain::new("h".into(), Head::genesis());
        let event = |name: &str| {
            let Value::Object(map) = json!({"event": name}) else {
                unreachable!()
            };
            map
        };
        let mut gap = event("gap");
        gap.insert("lost".into(), json!(1));
        gap.insert("torn".into(), json!(true));
        let text = [
            chain.link(event("start")),
            r#"{"event":"call","ha"#.to_owned() + "\n",
            chain.link(gap),
            chain.checkpoint(&key(), "t".into()),
        ];
        let report = check(&text);
        assert!(report.whole(), "{report}");
        assert_eq!((report.hosts["h"].torn, report.hosts["h"].lost), (1, 1));
        // Without the gap record right after it, it is a break.
        let mut moved = text.to_vec();
        moved.swap(0, 1);
        assert!(
            check(&moved)
                .breaks
                .iter()
                .any(|b| b.why == Break::Unreadable),
            "{}",
            check(&moved)
        );
    }
}
