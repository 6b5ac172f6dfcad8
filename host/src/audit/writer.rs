//! Writing the trail, off the request path: a bounded queue to a thread of
//! its own that links each record into the chain and writes it.
//!
//! A request never waits for the trail. When the queue is full the record
//! is lost, but not silently: the loss is counted
//! (`airlock_audit_dropped_total`), logged once per burst, and the writer
//! puts a `gap` record (how many, since when) into the chain as soon as it
//! takes the next record or wakes up, so the trail itself says so.
//!
//! The thread also writes a signed checkpoint every `checkpoint_every`
//! records or `checkpoint_interval`, whichever comes first, and one last
//! when it finishes.

use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use super::chain::{Chain, Head};
use super::key::AuditKey;
use super::now;

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

/// Records lost to a full queue since the last `gap` record, and when the
/// first of them was lost.
#[derive(Debug, Default)]
struct Lost {
    count: u64,
    since: Option<String>,
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
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => lose(&self.lost, 1),
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

/// Counts `records` as lost, and logs the first loss of a burst.
fn lose(lost: &Mutex<Lost>, records: u64) {
    let mut lost = lost.lock().unwrap_or_else(PoisonError::into_inner);
    if lost.count == 0 {
        lost.since = Some(now());
        tracing::warn!(
            "the audit queue is full: records are being lost (counted in airlock_audit_dropped_total; \
             a gap record in the trail will say how many); raise --audit-queue or give the trail a \
             faster destination"
        );
    }
    lost.count += records;
    crate::metrics::audit_dropped(records);
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
    let mut writer = Writer {
        chain: Chain::new(host, sink.head.clone()),
        sink,
        key,
        lost: lost.clone(),
        since_checkpoint: 0,
        settings: settings.clone(),
    };
    std::thread::Builder::new()
        .name("airlock-audit".into())
        .spawn(move || writer.run(&receiver))?;
    Ok(Queue { sender, lost })
}

/// The writer thread's state.
struct Writer {
    chain: Chain,
    sink: Sink,
    key: AuditKey,
    lost: Arc<Mutex<Lost>>,
    since_checkpoint: u64,
    settings: WriterSettings,
}

impl Writer {
    fn run(&mut self, receiver: &Receiver<Message>) {
        let mut start = Map::new();
        start.insert("event".into(), json!("start"));
        start.insert("time".into(), json!(now()));
        start.insert("version".into(), json!(env!("CARGO_PKG_VERSION")));
        start.insert("resumed".into(), json!(self.chain.head().seq > 0));
        self.write_record(start);
        let mut next_checkpoint = Instant::now() + self.settings.checkpoint_interval;
        loop {
            let message = match receiver.try_recv() {
                Ok(message) => Ok(message),
                Err(TryRecvError::Disconnected) => return,
                Err(TryRecvError::Empty) => {
                    // Flush once the queue is empty: a burst is written in one go.
                    self.flush();
                    let wait = next_checkpoint.saturating_duration_since(Instant::now());
                    receiver.recv_timeout(wait)
                }
            };
            match message {
                Ok(Message::Record(record)) => {
                    self.write_gap();
                    self.write_record(record);
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
        let lost = std::mem::take(&mut *self.lost.lock().unwrap_or_else(PoisonError::into_inner));
        if lost.count == 0 {
            return;
        }
        let mut gap = Map::new();
        gap.insert("event".into(), json!("gap"));
        gap.insert("time".into(), json!(now()));
        gap.insert("lost".into(), json!(lost.count));
        gap.insert("since".into(), json!(lost.since));
        self.write_record(gap);
    }

    fn write_record(&mut self, record: Map<String, Value>) {
        let line = self.chain.link(record);
        self.write_line(&line);
        self.since_checkpoint += 1;
    }

    fn checkpoint(&mut self) {
        let line = self.chain.checkpoint(&self.key, now());
        self.write_line(&line);
        self.since_checkpoint = 0;
    }

    fn write_line(&mut self, line: &str) {
        if let Err(error) = self.sink.write(line.as_bytes()) {
            tracing::error!(%error, "cannot write the audit trail");
            lose(&self.lost, 1);
        }
    }

    fn flush(&mut self) {
        if let Err(error) = self.sink.flush() {
            tracing::error!(%error, "cannot write the audit trail");
        }
    }
}

/// Where the writer writes: a file it rotates, or a stream.
struct Sink {
    out: BufWriter<Box<dyn Write + Send>>,
    file: Option<RotatedFile>,
    /// Where the chain stands in what is already there.
    head: Head,
}

/// The file of [`Destination::File`], and how big it is.
struct RotatedFile {
    path: PathBuf,
    max_bytes: u64,
    keep: u32,
    size: u64,
}

impl Sink {
    fn open(destination: &Destination, host: &str) -> anyhow::Result<Sink> {
        match destination {
            Destination::Stdout => Ok(Sink::stream(Box::new(io::stdout()))),
            Destination::File {
                path,
                max_bytes,
                keep,
            } => {
                let (file, size, last) = open_append(path)?;
                Ok(Sink {
                    out: BufWriter::new(Box::new(file)),
                    file: Some(RotatedFile {
                        path: path.clone(),
                        max_bytes: *max_bytes,
                        keep: *keep,
                        size,
                    }),
                    head: last
                        .and_then(|line| Head::after(&line, host))
                        .unwrap_or_else(Head::genesis),
                })
            }
        }
    }

    fn stream(out: Box<dyn Write + Send>) -> Sink {
        Sink {
            out: BufWriter::new(out),
            file: None,
            head: Head::genesis(),
        }
    }

    fn write(&mut self, line: &[u8]) -> io::Result<()> {
        if let Some(file) = &mut self.file {
            if file.size > 0 && file.size + line.len() as u64 > file.max_bytes {
                self.out.flush()?;
                rotate(&file.path, file.keep)?;
                let (new, size, _) = open_append(&file.path).map_err(io::Error::other)?;
                self.out = BufWriter::new(Box::new(new));
                file.size = size;
            }
            file.size += line.len() as u64;
        }
        self.out.write_all(line)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// `path` opened to append (created if missing), its size, and its last
/// line if it has one.
fn open_append(path: &Path) -> anyhow::Result<(File, u64, Option<String>)> {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .read(true)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot open the audit file {}: {e}", path.display()))?;
    let size = file.metadata()?.len();
    // The last record is short; 64 KiB from the end holds it.
    let from = size.saturating_sub(64 << 10);
    file.seek(SeekFrom::Start(from))?;
    let mut tail = String::new();
    (&mut file).take(64 << 10).read_to_string(&mut tail).ok();
    let last = tail.lines().next_back().map(str::to_owned);
    Ok((file, size, last))
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
        assert_eq!(report.hosts["h"].unsigned_tail, 0, "{report}");
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
                .map(|(name, text)| (name.as_str(), text.as_str())),
            Some(&key()),
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
        let report = verify([("stdout", text.as_str())], Some(&key()));
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
}
