//! The audit trail's options of `airlock serve`, the server log's format,
//! and `airlock audit verify`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;

use super::values;
use crate::audit::verify::Verdict;
use crate::audit::witness::Witness;
use crate::audit::{self, AuditKey, AuditSettings, Destination, WriterSettings};
use crate::sealing::{KeyRing, STATE_KEYS_ENV};

/// Audit options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Audit trail")]
pub struct AuditOptions {
    /// Write the audit trail (one JSON record per call, round, task change, authentication
    /// failure, refusal and reload, hash-chained and signed; see `airlock audit verify`) to this
    /// file, appending. Off by default.
    #[arg(long, value_name = "FILE", conflicts_with = "audit_stdout")]
    pub audit_file: Option<PathBuf>,
    /// Write the audit trail to standard output instead, for a log collector. HTTP only: with
    /// --stdio, standard output carries the protocol.
    #[arg(long, conflicts_with = "stdio")]
    pub audit_stdout: bool,
    /// Size past which the audit file is rotated: it becomes FILE.1 (FILE.1 becomes FILE.2, ...)
    /// and a new FILE goes on with the same chain.
    #[arg(long, value_name = "SIZE", default_value = "100MiB", requires = "audit_file",
          value_parser = values::size(4 << 10, u64::MAX))]
    pub audit_max_file_size: u64,
    /// Rotated audit files kept (FILE.1 to FILE.N); older ones are removed.
    #[arg(long, value_name = "N", default_value_t = 10, requires = "audit_file",
          value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub audit_keep: u32,
    /// Most audit records waiting to be written. Requests never wait for the trail: when the
    /// queue is full or a write fails (a full disk), records are lost, counted
    /// (airlock_audit_dropped_total) and a `gap` record says how many.
    #[arg(long, value_name = "N", default_value_t = 10_000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub audit_queue: u64,
    /// Records between two signed checkpoints of the audit chain, at most.
    #[arg(long, value_name = "N", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub audit_checkpoint_every: u64,
    /// Time between two signed checkpoints of the audit chain, at most (when records came).
    #[arg(long, value_name = "DURATION", default_value = "1m",
          value_parser = values::duration(Duration::from_millis(100)))]
    pub audit_checkpoint_interval: Duration,
    /// File of the audit key (one key, as `airlock keygen` prints it), which signs checkpoints
    /// and keys the digest of arguments. Without it, a key derived from the state keys (HKDF,
    /// label "airlock/audit"), the same on every host sharing them.
    #[arg(long, value_name = "FILE")]
    pub audit_key_file: Option<PathBuf>,
    /// The host id every audit record carries [default: this machine's name].
    #[arg(long, value_name = "NAME")]
    pub audit_host_id: Option<String>,
    /// Keep each signed checkpoint of the audit chain in this file too, replaced at every
    /// checkpoint: the head the trail must reach. Put it where whoever can write the trail cannot
    /// (another volume), and give it to `airlock audit verify --witness`, which then tells a trail
    /// cut back or an older copy put back. One file per host.
    #[arg(long, value_name = "FILE")]
    pub audit_witness: Option<PathBuf>,
}

impl AuditOptions {
    /// The trail's settings, if it is on.
    pub fn settings(&self) -> Option<AuditSettings> {
        let destination = match (&self.audit_file, self.audit_stdout) {
            (Some(path), _) => Destination::File {
                path: path.clone(),
                max_bytes: self.audit_max_file_size,
                keep: self.audit_keep,
            },
            (None, true) => Destination::Stdout,
            (None, false) => return None,
        };
        Some(AuditSettings {
            writer: WriterSettings {
                destination,
                queue: super::sandbox::saturate(self.audit_queue),
                checkpoint_every: self.audit_checkpoint_every,
                checkpoint_interval: self.audit_checkpoint_interval,
                witness: self.audit_witness.clone().map(Witness::file),
            },
            host: self
                .audit_host_id
                .clone()
                .unwrap_or_else(audit::default_host),
            key_file: self.audit_key_file.clone(),
        })
    }
}

/// `airlock audit`.
#[derive(Debug, clap::Subcommand)]
pub enum AuditCommand {
    /// Check audit files: whether they are whole, where a chain breaks and why, which hosts
    /// wrote them. Exits with 0 when whole (every chain intact, every record signed by a
    /// checkpoint, every witness reached), 1 on a break, 3 when intact but not proven (records
    /// no checkpoint signs, or no key given).
    Verify(VerifyOptions),
}

/// Options of `airlock audit verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyOptions {
    /// The audit files, oldest first (FILE.2 FILE.1 FILE); records of several hosts may be given
    /// together.
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The audit key file the server was given, to check the checkpoints' signatures.
    #[arg(long, value_name = "FILE", conflicts_with = "state_keys_file")]
    pub audit_key_file: Option<PathBuf>,
    /// The state keys file the server was given, when it had no audit key file (the key is
    /// derived from it). Without either, AIRLOCK_STATE_KEYS; without that, checkpoints are not
    /// checked and nothing is proven.
    #[arg(long, value_name = "FILE")]
    pub state_keys_file: Option<PathBuf>,
    /// A host's witness file (its --audit-witness): the files must hold the checkpoint it holds,
    /// or they were cut back or put back to an older copy. Once per host.
    #[arg(long, value_name = "FILE")]
    pub witness: Vec<PathBuf>,
    /// Accept records after the last checkpoint of their chain, which no signature covers yet (a
    /// running host's trail; reported all the same). Without it they make the files not proven.
    #[arg(long)]
    pub allow_unsigned_tail: bool,
}

impl AuditCommand {
    /// Runs the command: what the files come to.
    pub fn run(self) -> anyhow::Result<Verdict> {
        match self {
            AuditCommand::Verify(options) => options.run(),
        }
    }
}

impl VerifyOptions {
    fn key(&self) -> anyhow::Result<Option<AuditKey>> {
        if let Some(file) = &self.audit_key_file {
            return AuditKey::read(file).map(Some);
        }
        let text = match &self.state_keys_file {
            Some(file) => std::fs::read_to_string(file)
                .with_context(|| format!("cannot read state keys file {}", file.display()))?,
            None => match std::env::var(STATE_KEYS_ENV) {
                Ok(text) => text,
                Err(_) => return Ok(None),
            },
        };
        let keys = KeyRing::parse(&text).context("invalid state keys")?;
        Ok(Some(AuditKey::derived(&keys)))
    }

    fn run(self) -> anyhow::Result<Verdict> {
        let key = self.key()?;
        let mut texts = Vec::new();
        for file in &self.files {
            let text =
                std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
            texts.push((file.display().to_string(), text));
        }
        let mut witnesses = Vec::new();
        for file in &self.witness {
            let witnessed = Witness::file(file.clone())
                .read()?
                .with_context(|| format!("the witness {} does not exist", file.display()))?;
            witnesses.push((file.display().to_string(), witnessed));
        }
        let witnessed: Vec<_> = witnesses
            .iter()
            .map(|(name, witnessed)| (name.as_str(), witnessed))
            .collect();
        let mut report = audit::verify::verify(
            texts
                .iter()
                .map(|(name, text)| (name.as_str(), text.as_slice())),
            key.as_ref(),
            &witnessed,
        );
        report.allow_unsigned_tail = self.allow_unsigned_tail;
        print!("{report}");
        Ok(report.verdict())
    }
}
