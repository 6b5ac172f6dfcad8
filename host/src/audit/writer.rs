//! Writing the trail, off the request path: a bounded queue to a thread of
//! its own that links each record into the chain and writes it.
//!
//! A request never waits for the trail. A record that is not written is
//! lost, but not silently: when the queue is full, or when a write fails (a
//! full disk, an I/O error, a reader gone), the loss is counted
//! (`airlock_audit_dropped_total`) once per record, logged once per burst,
//! and the writer puts a `gap` record (how many, since when) into the chain
//! as soon as it can write again, so the trail itself says so.
//!
//! What the destination holds is always whole records of one chain: the
//! writer knows which lines a failed write left, cuts the torn end of a
//! file back to its last whole line, rewinds the chain to the last record
//! written, and counts the rest as lost (a stream cannot be cut: the next
//! line there starts on a line of its own, and its `gap` record says
//! `torn`).
//!
//! The thread also writes a signed checkpoint every `checkpoint_every`
//! records or `checkpoint_interval`, whichever comes first, and one last
//! when it finishes; once a checkpoint is written, it is given to the
//! [`Witness`], if any.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::chain::{Chain, Head};
use super::key::AuditKey;
use super::now;
use super::witness::Witness;

/// Bytes of lines the writer gathers before it writes them, at most (it
/// writes sooner when its queue is empty).
const BATCH_BYTES: usize = 64 << 10;

/// The longest line the writer reads back from the end of its file to go on
/// with its chain.
const MAX_TAIL: u64 = 1 << 20;

/// Where records go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// This file, rotated when it would grow past `max_bytes`: it becomes
    /// `PATH.1` (and `PATH.1` `PATH.2`, ...), and at most `keep` rotated
    /// files are kept.
    File {
        /// The file.
        path: PathBuf,
        /// Largest size before rotating.
        max_bytes: u64,
        /// Rotated files kept.
        keep: u32,
    },
    /// Standard output, for a log collector.
    Stdout,
}

/// How the writer runs.
#[derive(Debug, Clone)]
pub struct WriterSettings {
    /// Where records go.
    pub destination: Destination,
    /// Most records waiting for the writer.
    pub queue: usize,
    /// Records between two checkpoints, at most.
    pub checkpoint_every: u64,
    /// Time between two checkpoints, at most (when records came meanwhile).
    pub checkpoint_interval: Duration,
    /// Where each checkpoint written is also kept, outside the trail.
    pub witness: Option<Witness>,
}

impl WriterSettings {
    /// The file records go to, if they go to a file.
    pub fn file(&self) -> Option<&PathBuf> {
        match &self.destination {
            Destination::File { path, .. } => Some(path),
            Destination::Stdout => None,
        }
    }
}

/// What the writer thread is sent.
enum Message {
    /// A record to link and write.
    Record(Map<String, Value>),
    /// Write a last checkpoint, flush, tell, and stop.
    Finish(mpsc::Sender<()>),
}

/// Records lost since the last `gap` record written, and when the first of
/// them was lost.
#[derive(Debug, Default, Clone)]
struct Lost {
    count: u64,
    since: Option<String>,
    /// Whether a failed write left part of a line on a stream.
    torn: bool,
}

impl Lost {
    /// Counts `records` more as lost (once: here and in the metric);
    /// whether they start a burst.
    fn add(&mut self, records: u64) -> bool {
        let first = self.count == 0;
        if first {
            self.since = Some(now());
        }
        self.count += records;
        crate::metrics::audit_dropped(records);
        first
    }

    /// Takes back the losses of a `gap` record that could not be written:
    /// they were counted already, and happened before the ones counted
    /// since.
    fn restore(&mut self, unwritten: Lost) {
        self.count += unwritten.count;
        self.since = unwritten.since.or(self.since.take());
        self.torn |= unwritten.torn;
    }
}

/// The sending end of the writer's queue.
#[derive(Debug)]
pub struct Queue {
    sender: SyncSender<Message>,
    lost: Arc<Mutex<Lost>>,
}

impl Queue {
    /// Queues `record` for the writer without waiting; when the queue is
    /// full (or the writer gone), counts it as lost instead.
    pub fn push(&self, record: Map<String, Value>) {
        match self.sender.try_send(Message::Record(record)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                let first = locked(&self.lost).add(1);
                if first {
                    tracing::warn!(
                        "the audit queue is full: records are being lost (counted in airlock_audit_dropped_total; \
                         a gap record in the trail will say how many); raise --audit-queue or give the trail a \
                         faster destination"
                    );
                }
            }
        }
    }

    /// Asks the writer to write a last checkpoint and flush, waiting at most
    /// `timeout` for it.
    pub fn finish(&self, timeout: Duration) -> bool {
        let (done, finished) = mpsc::channel();
        let sender = self.sender.clone();
        // Sent from a thread of its own: the queue may be full.
        std::thread::spawn(move || sender.send(Message::Finish(done)));
        finished.recv_timeout(timeout).is_ok()
    }
}

fn locked(lost: &Mutex<Lost>) -> std::sync::MutexGuard<'_, Lost> {
    lost.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Starts the writer thread of `host`'s chain; its first record is a
/// `start` record.
pub fn start(settings: &WriterSettings, host: String, key: AuditKey) -> anyhow::Result<Queue> {
    let sink = Sink::open(&settings.destination, &host)?;
    start_with(settings, host, key, sink)
}

/// [`start`], writing to `sink`.
fn start_with(
    settings: &WriterSettings,
    host: String,
    key: AuditKey,
    sink: Sink,
) -> anyhow::Result<Queue> {
    let (sender, receiver) = mpsc::sync_channel(settings.queue);
    let lost = Arc::new(Mutex::new(Lost::default()));
    let head = sink.head.clone();
    let mut writer = Writer {
        chain: Chain::new(host, head.clone()),
        written: Mark {
            head,
            since_checkpoint: 0,
        },
        sink,
        key,
        lost: lost.clone(),
        since_checkpoint: 0,
        batch: Batch::default(),
        failing: false,
        settings: settings.clone(),
    };
    std::thread::Builder::new()
        .name("airlock-audit".into())
        .spawn(move || writer.run(&receiver))?;
    Ok(Queue { sender, lost })
}

/// Where the chain stands after a line.
#[derive(Debug, Clone)]
struct Mark {
    head: Head,
    /// Records since the last checkpoint.
    since_checkpoint: u64,
}

/// What a line of a batch is, for when it cannot be written.
#[derive(Debug)]
enum LineKind {
    /// A record of an event: lost, and counted, if not written.
    Event,
    /// A `gap` record, with the losses it tells: told by the next one if
    /// it is not written.
    Gap(Lost),
    /// A checkpoint: made again later if not written.
    Checkpoint,
}

/// A line linked into the chain, not written yet.
#[derive(Debug)]
struct BatchLine {
    /// Where it ends in the batch's bytes.
    end: usize,
    kind: LineKind,
    /// Where the chain stands after it.
    after: Mark,
}

/// Lines linked into the chain and not written yet.
#[derive(Debug, Default)]
struct Batch {
    bytes: Vec<u8>,
    lines: Vec<BatchLine>,
}

/// The writer thread's state.
struct Writer {
    chain: Chain,
    /// Where the chain stands in what the sink holds.
    written: Mark,
    sink: Sink,
    key: AuditKey,
    lost: Arc<Mutex<Lost>>,
    since_checkpoint: u64,
    batch: Batch,
    /// Whether the last write failed (to log once per burst).
    failing: bool,
    settings: WriterSettings,
}

impl Writer {
    fn run(&mut self, receiver: &Receiver<Message>) {
        let mut start = Map::new();
        start.insert("event".into(), json!("start"));
        start.insert("time".into(), json!(now()));
        start.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        start.insert("resumed".into(), json!(self.chain.head().seq > 0));
        if self.sink.cut > 0 {
            start.insert("cut_bytes".into(), json!(self.sink.cut));
        }
        if let Some(witness) = &self.settings.witness
            && let Some(behind) = witness.ahead_of(self.chain.host(), self.chain.head(), &self.key)
        {
            start.insert("behind_witness".into(), behind);
        }
        self.write_record(start, LineKind::Event);
        let mut next_checkpoint = Instant::now() + self.settings.checkpoint_interval;
        loop {
            let message = match receiver.try_recv() {
                Ok(message) => Ok(message),
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {
                    // Write once the queue is empty: a burst is written in one go.
                    self.flush();
                    let wait = next_checkpoint.saturating_duration_since(Instant::now());
                    receiver.recv_timeout(wait)
                }
            };
            match message {
                Ok(Message::Record(record)) => {
                    self.write_gap();
                    self.write_record(record, LineKind::Event);
                    if self.since_checkpoint >= self.settings.checkpoint_every {
                        self.checkpoint();
                        next_checkpoint = Instant::now() + self.settings.checkpoint_interval;
                    }
                }
                Ok(Message::Finish(done)) => {
                    self.write_gap();
                    self.checkpoint();
                    self.flush();
                    let _ = done.send(());
                    return;
                }
                Err(RecvTimeoutError::Timeout) => {
                    self.write_gap();
                    if self.since_checkpoint > 0 {
                        self.checkpoint();
                    }
                    next_checkpoint = Instant::now() + self.settings.checkpoint_interval;
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }

    /// Writes a `gap` record if records were lost since the last one.
    fn write_gap(&mut self) {
        let lost = std::mem::take(&mut *locked(&self.lost));
        if lost.count == 0 && !lost.torn {
            return;
        }
        let mut gap = Map::new();
        gap.insert("event".into(), json!("gap"));
        gap.insert("time".into(), json!(now()));
        gap.insert("lost".into(), json!(lost.count));
        gap.insert("since".into(), json!(lost.since));
        if lost.torn {
            gap.insert("torn".into(), json!(true));
        }
        self.write_record(gap, LineKind::Gap(lost));
    }

    fn write_record(&mut self, record: Map<String, Value>, kind: LineKind) {
        let line = self.chain.link(record);
        self.since_checkpoint += 1;
        self.add(&line, kind);
    }

    fn checkpoint(&mut self) {
        let line = self.chain.checkpoint(&self.key, now());
        self.since_checkpoint = 0;
        self.add(&line, LineKind::Checkpoint);
    }

    /// Adds `line` to the batch, and writes the batch once it is large.
    fn add(&mut self, line: &str, kind: LineKind) {
        self.batch.bytes.extend_from_slice(line.as_bytes());
        self.batch.lines.push(BatchLine {
            end: self.batch.bytes.len(),
            kind,
            after: Mark {
                head: self.chain.head().clone(),
                since_checkpoint: self.since_checkpoint,
            },
        });
        if self.batch.bytes.len() >= BATCH_BYTES {
            self.flush();
        }
    }

    /// Writes the batch. The lines the sink did not take are lost: the
    /// records among them are counted, the chain goes on from the last line
    /// written, and the next `gap` record says so.
    fn flush(&mut self) {
        if self.batch.lines.is_empty() {
            return;
        }
        let batch = std::mem::take(&mut self.batch);
        let ends: Vec<usize> = batch.lines.iter().map(|line| line.end).collect();
        let written = self.sink.write_lines(&batch.bytes, &ends);
        let (taken, left) = batch.lines.split_at(written.lines);
        if let Some(last) = taken.last() {
            self.written = last.after.clone();
        }
        if let Some(witness) = &self.settings.witness
            && let Some(at) = taken
                .iter()
                .rposition(|line| matches!(line.kind, LineKind::Checkpoint))
        {
            let from = at.checked_sub(1).map_or(0, |before| ends[before]);
            let checkpoint = String::from_utf8_lossy(&batch.bytes[from..ends[at]]);
            if let Err(error) = witness.keep(checkpoint.trim_end()) {
                tracing::error!(%error, "cannot write the audit witness");
            }
        }
        let Some(error) = written.error else {
            if std::mem::take(&mut self.failing) {
                tracing::info!("the audit trail is written again; a gap record says what was lost");
            }
            return;
        };
        self.chain.rewind(self.written.head.clone());
        self.since_checkpoint = self.written.since_checkpoint;
        let mut lost = locked(&self.lost);
        let mut events = 0;
        for line in left {
            match &line.kind {
                LineKind::Event => events += 1,
                LineKind::Gap(told) => lost.restore(told.clone()),
                LineKind::Checkpoint => {}
            }
        }
        lost.torn |= written.torn;
        if events > 0 {
            lost.add(events);
        }
        drop(lost);
        if !std::mem::replace(&mut self.failing, true) {
            tracing::error!(
                %error,
                "cannot write the audit trail: records are being lost (counted in \
                 airlock_audit_dropped_total; a gap record in the trail will say how many once it \
                 can be written again)"
            );
        }
    }
}

/// What a write of lines left in the sink.
#[derive(Debug)]
struct Written {
    /// The lines it holds now, from the first.
    lines: usize,
    /// Why the rest is not there.
    error: Option<io::Error>,
    /// Whether part of the first line not written is there (a stream only:
    /// a file is cut back).
    torn: bool,
}

/// Where the writer writes: a file it rotates, or a stream.
struct Sink {
    out: Output,
    /// Where the chain stands in what is already there.
    head: Head,
    /// Bytes of a torn last line cut from the file when it was opened.
    cut: u64,
}

enum Output {
    File(RotatedFile),
    Stream {
        out: Box<dyn Write + Send>,
        /// Whether the last write ended inside a line.
        torn: bool,
    },
}

/// The file of [`Destination::File`], and how big it is.
struct RotatedFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    /// The open file; `None` after a rotation that could not open the new
    /// one.
    file: Option<File>,
    size: u64,
    /// Whether the file may hold more than `size` bytes (a failed write
    /// that could not be cut back): cut before anything else is written.
    uncut: bool,
}

impl Sink {
    fn open(destination: &Destination, host: &str) -> anyhow::Result<Sink> {
        match destination {
            Destination::Stdout => {
                // Written with write(2) itself, not through std's buffered
                // stdout, so the writer knows which bytes went out.
                let fd = io::stdout().as_fd().try_clone_to_owned()?;
                Ok(Sink::stream(Box::new(File::from(fd))))
            }
            Destination::File {
                path,
                max_bytes,
                keep,
            } => {
                let opened = open_append(path)?;
                if opened.cut > 0 {
                    tracing::warn!(
                        file = %path.display(),
                        bytes = opened.cut,
                        "the audit file ended in a torn line (the last run stopped while writing it): cut"
                    );
                }
                Ok(Sink {
                    out: Output::File(RotatedFile {
                        path: path.clone(),
                        max_bytes: *max_bytes,
                        keep: *keep,
                        file: Some(opened.file),
                        size: opened.size,
                        uncut: false,
                    }),
                    head: opened
                        .last
                        .and_then(|line| Head::after(&line, host))
                        .unwrap_or_else(Head::genesis),
                    cut: opened.cut,
                })
            }
        }
    }

    fn stream(out: Box<dyn Write + Send>) -> Sink {
        Sink {
            out: Output::Stream { out, torn: false },
            head: Head::genesis(),
            cut: 0,
        }
    }

    /// Writes `bytes`, lines ending at `ends`, as far as it can.
    fn write_lines(&mut self, bytes: &[u8], ends: &[usize]) -> Written {
        match &mut self.out {
            Output::File(file) => file.write_lines(bytes, ends),
            Output::Stream { out, torn } => {
                if *torn {
                    let (_, error) = write_counting(out, b"\n");
                    if let Some(error) = error {
                        return Written {
                            lines: 0,
                            error: Some(error),
                            torn: false,
                        };
                    }
                    *torn = false;
                }
                let (done, error) = write_counting(out, bytes);
                let error = error.or_else(|| out.flush().err());
                let lines = ends.partition_point(|&end| end <= done);
                let line_start = lines.checked_sub(1).map_or(0, |last| ends[last]);
                *torn = error.is_some() && done > line_start;
                Written {
                    lines,
                    error,
                    torn: *torn,
                }
            }
        }
    }
}

impl RotatedFile {
    fn write_lines(&mut self, bytes: &[u8], ends: &[usize]) -> Written {
        let mut lines = 0;
        let failed = |lines, error| Written {
            lines,
            error: Some(error),
            torn: false,
        };
        while lines < ends.len() {
            let from = lines.checked_sub(1).map_or(0, |last| ends[last]);
            if let Err(error) = self.open() {
                return failed(lines, error);
            }
            if self.size > 0 && self.size + (ends[lines] - from) as u64 > self.max_bytes {
                self.file = None;
                if let Err(error) = rotate(&self.path, self.keep) {
                    return failed(lines, error);
                }
            }
            if let Err(error) = self.open() {
                return failed(lines, error);
            }
            // The lines that fit before the next rotation (at least one).
            let room = self.max_bytes.saturating_sub(self.size);
            let last =
                lines + ends[lines + 1..].partition_point(|&end| ((end - from) as u64) <= room);
            let Some(file) = self.file.as_mut() else {
                unreachable!("opened above")
            };
            let (done, error) = write_counting(file, &bytes[from..ends[last]]);
            let whole = ends[lines..=last].partition_point(|&end| end <= from + done);
            let kept = (lines + whole)
                .checked_sub(1)
                .map_or(0, |kept| ends[kept])
                .max(from);
            self.size += (kept - from) as u64;
            lines += whole;
            if let Some(error) = error {
                if kept < from + done {
                    self.uncut = true;
                    let _ = self.open();
                }
                return failed(lines, error);
            }
        }
        Written {
            lines,
            error: None,
            torn: false,
        }
    }

    /// Opens the file (again) if need be, and cuts it back to `size` if a
    /// failed write left more.
    fn open(&mut self) -> io::Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => {
                let opened = open_append(&self.path).map_err(io::Error::other)?;
                self.size = opened.size;
                self.file.insert(opened.file)
            }
        };
        if self.uncut {
            file.set_len(self.size)?;
            self.uncut = false;
        }
        Ok(())
    }
}

/// Writes as much of `bytes` as `out` takes: how much, and why not more.
fn write_counting(out: &mut impl Write, bytes: &[u8]) -> (usize, Option<io::Error>) {
    let mut done = 0;
    while done < bytes.len() {
        match out.write(&bytes[done..]) {
            Ok(0) => return (done, Some(io::ErrorKind::WriteZero.into())),
            Ok(n) => done += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return (done, Some(error)),
        }
    }
    (done, None)
}

/// An audit file opened to append.
struct Opened {
    file: File,
    /// Its size.
    size: u64,
    /// Its last line, if it has one.
    last: Option<String>,
    /// Bytes of a torn last line (no newline) cut from its end.
    cut: u64,
}

/// `path` opened to append (created if missing), a torn last line cut.
fn open_append(path: &Path) -> anyhow::Result<Opened> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open the audit file {}: {e}", path.display()))?;
    let mut size = file.metadata()?.len();
    let from = size.saturating_sub(MAX_TAIL);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = Vec::new();
    (&mut file).take(MAX_TAIL).read_to_end(&mut tail)?;
    let mut cut = 0;
    if !tail.is_empty() && !tail.ends_with(b"\n") {
        let Some(kept) = tail
            .iter()
            .rposition(|&b| b == b'\n')
            .map(|at| at + 1)
            .or((from == 0).then_some(0))
        else {
            anyhow::bail!(
                "the audit file {} ends in a line longer than {MAX_TAIL} bytes: not an audit trail",
                path.display()
            );
        };
        cut = (tail.len() - kept) as u64;
        size -= cut;
        file.set_len(size).map_err(|e| {
            anyhow::anyhow!("cannot cut the torn last line of {}: {e}", path.display())
        })?;
        tail.truncate(kept);
    }
    let last = String::from_utf8_lossy(&tail)
        .lines()
        .next_back()
        .map(str::to_owned);
    Ok(Opened {
        file,
        size,
        last,
        cut,
    })
}

/// `path` becomes `path.1`, `path.1` `path.2`, ...; the rotated file past
/// `keep` is removed.
fn rotate(path: &Path, keep: u32) -> io::Result<()> {
    let numbered = |n: u32| {
        let mut name = path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    };
    let gone = |result: io::Result<()>| match result {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    };
    gone(fs::remove_file(numbered(keep.max(1))))?;
    for n in (1..keep).rev() {
        gone(fs::rename(numbered(n), numbered(n + 1)))?;
    }
    if keep == 0 {
        fs::remove_file(path)
    } else {
        fs::rename(path, numbered(1))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Condvar;

    use super::super::verify::verify;
    use super::*;

    fn settings(destination: Destination, queue: usize) -> WriterSettings {
        WriterSettings {
            destination,
            queue,
            checkpoint_every: 3,
            checkpoint_interval: Duration::from_secs(3600),
            witness: None,
        }
    }

    fn record(n: u64) -> Map<String, Value> {
        let Value::Object(map) = json!({"event": "call", "n": n}) else {
            unreachable!()
        };
        map
    }

    fn key() -> AuditKey {
        AuditKey::new(&[5; 32])
    }

    fn read(path: &Path) -> String {
        fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn rotation_keeps_the_chain_across_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let destination = Destination::File {
            path: path.clone(),
            max_bytes: 1000,
            keep: 100,
        };
        let queue = start(&settings(destination.clone(), 100), "h".into(), key()).unwrap();
        for n in 0..20 {
            queue.push(record(n));
        }
        assert!(queue.finish(Duration::from_secs(30)));
        let texts = all_files(dir.path());
        assert!(texts.len() >= 3, "rotated: {texts:?}");
        assert!(texts.iter().all(|(_, text)| text.len() <= 1000));
        let report = verify_all(&texts);
        assert!(report.whole(), "{report}");
        assert!(report.hosts["h"].starts_here);
        assert_eq!(report.hosts["h"].unsigned, 0, "{report}");
        let calls = |texts: &[(String, String)]| {
            texts
                .iter()
                .map(|(_, t)| t.matches(r#""event":"call""#).count())
                .sum::<usize>()
        };
        assert_eq!(calls(&texts), 20);

        // A restart goes on with the chain of the file.
        let queue = start(&settings(destination, 100), "h".into(), key()).unwrap();
        queue.push(record(99));
        assert!(queue.finish(Duration::from_secs(30)));
        let texts = all_files(dir.path());
        let report = verify_all(&texts);
        assert!(report.whole(), "{report}");
        assert!(report.hosts["h"].restarts.is_empty(), "{report}");
        assert_eq!(calls(&texts), 21);
        assert!(
            texts.iter().any(|(_, t)| t.contains(r#""resumed":true"#)),
            "{texts:?}"
        );
    }

    /// The files of `dir` named `audit.jsonl*`, oldest first.
    fn all_files(dir: &Path) -> Vec<(String, String)> {
        let path = dir.join("audit.jsonl");
        let mut files: Vec<PathBuf> = (1..=100)
            .rev()
            .map(|n| dir.join(format!("audit.jsonl.{n}")))
            .filter(|p| p.exists())
            .collect();
        files.push(path);
        files
            .iter()
            .map(|p| (p.display().to_string(), read(p)))
            .collect()
    }

    fn verify_all(texts: &[(String, String)]) -> super::super::verify::Report {
        verify(
            texts
                .iter()
                .map(|(name, text)| (name.as_str(), text.as_bytes())),
            Some(&key()),
            &[],
        )
    }

    #[test]
    fn keep_bounds_the_rotated_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        let destination = Destination::File {
            path: path.clone(),
            max_bytes: 600,
            keep: 2,
        };
        let queue = start(&settings(destination, 100), "h".into(), key()).unwrap();
        for n in 0..30 {
            queue.push(record(n));
        }
        assert!(queue.finish(Duration::from_secs(30)));
        assert!(dir.path().join("a.1").exists() && dir.path().join("a.2").exists());
        assert!(!dir.path().join("a.3").exists());
    }

    /// Whether the gate is open, and what was written through it.
    type GateState = Mutex<(bool, Vec<u8>)>;

    /// A stream that writes nothing until it is opened, then into a buffer.
    #[derive(Clone, Default)]
    struct Gate(Arc<(GateState, Condvar)>);

    impl Gate {
        fn open(&self) {
            self.0.0.lock().unwrap().0 = true;
            self.0.1.notify_all();
        }
        fn text(&self) -> String {
            String::from_utf8(self.0.0.lock().unwrap().1.clone()).unwrap()
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let (lock, opened) = &*self.0;
            let mut state = opened.wait_while(lock.lock().unwrap(), |s| !s.0).unwrap();
            state.1.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_queue_loses_records_and_the_trail_says_so() {
        let gate = Gate::default();
        let sink = Sink::stream(Box::new(gate.clone()));
        let mut settings = settings(Destination::Stdout, 2);
        settings.checkpoint_every = 1000;
        let queue = start_with(&settings, "h".into(), key(), sink).unwrap();
        // The writer is stuck on its first write: the queue fills and the
        // rest is lost, without waiting.
        for n in 0..50 {
            queue.push(record(n));
        }
        gate.open();
        assert!(queue.finish(Duration::from_secs(30)));
        let text = gate.text();
        let report = verify([("stdout", text.as_bytes())], Some(&key()), &[]);
        assert!(report.whole(), "{report}");
        let lost = report.hosts["h"].lost;
        assert!(lost > 0, "{text}");
        let written = text.matches(r#""event":"call""#).count() as u64;
        assert_eq!(
            written + lost,
            50,
            "every record is written or counted: {text}"
        );
        let gap: Map<String, Value> = serde_json::from_str(
            text.lines()
                .find(|l| l.contains(r#""event":"gap""#))
                .expect("a gap record"),
        )
        .unwrap();
        assert!(gap["since"].is_string());
    }

    /// A disk that takes `room` bytes more, then fails as a full disk does
    /// (a write that does not fit takes what fits), until given more room.
    #[derive(Clone, Default)]
    struct Disk(Arc<Mutex<(usize, Vec<u8>)>>);

    impl Disk {
        fn free(&self, bytes: usize) {
            self.0.lock().unwrap().0 += bytes;
        }
        fn bytes(&self) -> Vec<u8> {
            self.0.lock().unwrap().1.clone()
        }
        fn calls(&self) -> u64 {
            String::from_utf8_lossy(&self.bytes())
                .matches(r#""event":"call""#)
                .count() as u64
        }
    }

    impl Write for Disk {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let mut disk = self.0.lock().unwrap();
            if disk.0 == 0 {
                return Err(io::ErrorKind::StorageFull.into());
            }
            let taken = disk.0.min(buf.len());
            disk.0 -= taken;
            disk.1.extend_from_slice(&buf[..taken]);
            Ok(taken)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_full_disk_loses_records_counted_once_and_the_chain_stays_whole() {
        let disk = Disk::default();
        disk.free(1 << 20);
        let mut settings = settings(Destination::Stdout, 1000);
        settings.checkpoint_every = 1000;
        let queue = start_with(
            &settings,
            "h".into(),
            key(),
            Sink::stream(Box::new(disk.clone())),
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while !disk.bytes().ends_with(b"\n") {
            assert!(Instant::now() < deadline, "no start record");
            std::thread::sleep(Duration::from_millis(10));
        }
        // The disk fills in the middle of the next line.
        disk.0.lock().unwrap().0 = 10;
        for n in 0..100 {
            queue.push(record(n));
        }
        // Every record is either on the disk or counted as lost.
        while disk.calls() + locked(&queue.lost).count != 100 {
            assert!(Instant::now() < deadline, "the writer does not settle");
            std::thread::sleep(Duration::from_millis(10));
        }
        let lost = locked(&queue.lost).clone();
        assert!(lost.count > 0 && lost.torn, "{lost:?}");
        disk.free(1 << 20);
        queue.push(record(100));
        assert!(queue.finish(Duration::from_secs(30)));

        let bytes = disk.bytes();
        let report = verify([("disk", bytes.as_slice())], Some(&key()), &[]);
        assert!(report.whole(), "{report}");
        let host = &report.hosts["h"];
        assert_eq!(host.lost, lost.count, "one gap record tells every loss");
        assert_eq!(host.torn, 1, "{report}");
        assert_eq!(disk.calls() + host.lost, 101, "{report}");
        let text = String::from_utf8(bytes).unwrap();
        let gaps: Vec<&str> = text
            .lines()
            .filter(|l| l.contains(r#""event":"gap""#))
            .collect();
        assert_eq!(gaps.len(), 1, "{text}");
        assert!(gaps[0].contains(r#""torn":true"#), "{text}");
    }

    #[test]
    fn a_torn_last_line_is_cut_and_the_chain_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.jsonl");
        let destination = Destination::File {
            path: path.clone(),
            max_bytes: 1 << 20,
            keep: 1,
        };
        let queue = start(&settings(destination.clone(), 100), "h".into(), key()).unwrap();
        queue.push(record(0));
        assert!(queue.finish(Duration::from_secs(30)));
        let whole = read(&path);
        // A run that stopped in the middle of a line.
        let torn = r#"{"event":"call","hash":"ab"#;
        fs::write(&path, format!("{whole}{torn}")).unwrap();

        let queue = start(&settings(destination, 100), "h".into(), key()).unwrap();
        queue.push(record(1));
        assert!(queue.finish(Duration::from_secs(30)));
        let text = read(&path);
        assert!(text.starts_with(&whole) && !text.contains(torn), "{text}");
        assert!(
            text.contains(&format!(r#""cut_bytes":{}"#, torn.len())),
            "{text}"
        );
        let report = verify([("a", text.as_bytes())], Some(&key()), &[]);
        assert!(report.whole(), "{report}");
        assert!(report.hosts["h"].restarts.is_empty(), "one chain: {report}");
    }
}
