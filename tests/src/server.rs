//! Starting `airlock serve` on a temporary tools directory, and stopping it.

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use crate::http::Http;
use crate::paths::{airlock_bin, component};
use crate::stdio::StdioServer;

/// How long a server may take to say it is listening.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// Every tool the sample components offer, sorted by name.
pub const SAMPLE_TOOLS: [&str; 7] = [
    "build_report",
    "confirm",
    "deploy",
    "list_roots",
    "sha256",
    "summarize",
    "update_work_item",
];

/// The six sample tool components.
pub const SAMPLES: &[&str] = &[
    "work_items",
    "deploy",
    "summarize",
    "workspace",
    "report",
    "hash",
];

/// A temporary tools directory. Cloning shares the same directory; it is
/// removed when the last clone is dropped.
#[derive(Clone)]
pub struct ToolsDir {
    dir: Arc<tempfile::TempDir>,
}

impl Default for ToolsDir {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolsDir {
    /// An empty tools directory.
    pub fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("airlock-tools-")
            .tempdir()
            .expect("create a temporary tools directory");
        Self { dir: Arc::new(dir) }
    }

    /// A tools directory holding the given components under their own names.
    pub fn with(components: &[&str]) -> Self {
        let tools = Self::new();
        for name in components {
            tools.add(name);
        }
        tools
    }

    /// Copies component `name` in as `<name>.wasm`.
    pub fn add(&self, name: &str) -> &Self {
        self.add_as(name, &format!("{}.wasm", name.replace('-', "_")))
    }

    /// Copies component `name` in as `file_name` (overwriting it in place if
    /// it exists).
    pub fn add_as(&self, name: &str, file_name: &str) -> &Self {
        let from = component(name);
        fs::copy(&from, self.path().join(file_name))
            .unwrap_or_else(|e| panic!("copy {} into the tools dir: {e}", from.display()));
        self
    }

    /// Publishes component `name` as `file_name` the safe way for a
    /// running server: copied to a temporary name the server ignores (not
    /// `*.wasm`), then renamed over `file_name` in one step.
    pub fn publish_as(&self, name: &str, file_name: &str) -> &Self {
        let from = component(name);
        let temporary = self.path().join(format!(".{file_name}.partial"));
        fs::copy(&from, &temporary)
            .unwrap_or_else(|e| panic!("copy {} into the tools dir: {e}", from.display()));
        fs::rename(&temporary, self.path().join(file_name))
            .unwrap_or_else(|e| panic!("rename {} into place: {e}", temporary.display()));
        self
    }

    /// Removes `file_name`.
    pub fn remove(&self, file_name: &str) -> &Self {
        fs::remove_file(self.path().join(file_name))
            .unwrap_or_else(|e| panic!("remove {file_name} from the tools dir: {e}"));
        self
    }

    /// Writes a file with the given bytes.
    pub fn add_bytes(&self, file_name: &str, bytes: &[u8]) -> &Self {
        let path = self.path().join(file_name);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("make the directories of a file in the tools dir");
        }
        fs::write(path, bytes).expect("write into the tools dir");
        self
    }

    /// Makes a FIFO named `file_name` (which nobody writes to: opening it
    /// to read waits forever).
    pub fn add_fifo(&self, file_name: &str) -> &Self {
        let path = self.path().join(file_name);
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("run mkfifo");
        assert!(status.success(), "mkfifo {} failed", path.display());
        self
    }

    /// Writes a sparse file of `len` bytes that starts with `head`: large
    /// to whoever reads it, and costing no disk space.
    pub fn add_sparse(&self, file_name: &str, head: &[u8], len: u64) -> &Self {
        let path = self.path().join(file_name);
        fs::write(&path, head).expect("write into the tools dir");
        fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .and_then(|file| file.set_len(len))
            .expect("extend a sparse file");
        self
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Builds the command line of one `airlock serve` process.
#[derive(Clone)]
pub struct Airlock {
    tools: Option<ToolsDir>,
    tools_path: Option<PathBuf>,
    working_dir: Option<PathBuf>,
    args: Vec<OsString>,
    envs: Vec<(OsString, OsString)>,
    cache: bool,
    listen: Option<String>,
    start_timeout: Duration,
}

impl Airlock {
    /// `airlock serve --tools <tools>`.
    pub fn new(tools: &ToolsDir) -> Self {
        Self {
            tools: Some(tools.clone()),
            tools_path: Some(tools.path().to_path_buf()),
            working_dir: None,
            args: Vec::new(),
            envs: Vec::new(),
            cache: false,
            listen: None,
            start_timeout: START_TIMEOUT,
        }
    }

    /// `airlock serve --tools <path>` for a path that is not a [`ToolsDir`]
    /// (e.g. one that does not exist).
    pub fn with_tools_path(path: impl Into<PathBuf>) -> Self {
        Self {
            tools: None,
            tools_path: Some(path.into()),
            working_dir: None,
            args: Vec::new(),
            envs: Vec::new(),
            cache: false,
            listen: None,
            start_timeout: START_TIMEOUT,
        }
    }

    /// `airlock serve` without `--tools`, run in an empty working directory
    /// of its own (kept while the server runs), where the default `tools`
    /// does not exist.
    pub fn without_tools() -> Self {
        let empty = ToolsDir::new();
        Self {
            working_dir: Some(empty.path().to_path_buf()),
            tools: Some(empty),
            tools_path: None,
            args: Vec::new(),
            envs: Vec::new(),
            cache: false,
            listen: None,
            start_timeout: START_TIMEOUT,
        }
    }

    /// Adds one argument.
    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Self {
        self.args.push(arg.as_ref().to_os_string());
        self
    }

    /// Adds arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.args
            .extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
        self
    }

    /// Sets an environment variable for the process.
    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Self {
        self.envs
            .push((key.as_ref().to_os_string(), value.as_ref().to_os_string()));
        self
    }

    /// Lets the caller pass `--cache-dir` instead of the default `--no-cache`.
    pub fn with_cache(mut self) -> Self {
        self.cache = true;
        self
    }

    /// Waits up to `timeout` for the server to listen and load its
    /// components, instead of [`START_TIMEOUT`]: for a start that compiles
    /// large components (tens of seconds each on a busy machine).
    pub fn start_within(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Listens on `address` (e.g. `127.0.0.1:8123`) instead of a free port:
    /// a host restarted where its load balancer expects it.
    pub fn listen(mut self, address: &str) -> Self {
        self.listen = Some(address.to_owned());
        self
    }

    fn command(&self, stdio: bool) -> Command {
        let mut cmd = Command::new(airlock_bin());
        if let Some(dir) = &self.working_dir {
            cmd.current_dir(dir);
        }
        cmd.arg("serve");
        if let Some(path) = &self.tools_path {
            cmd.arg("--tools").arg(path);
        }
        if stdio {
            cmd.arg("--stdio");
        } else {
            cmd.arg("--listen")
                .arg(self.listen.as_deref().unwrap_or("127.0.0.1:0"));
        }
        if !self.cache {
            cmd.arg("--no-cache");
        }
        cmd.args(&self.args);
        // Every AIRLOCK_* setting comes only from what a test sets.
        for (key, _) in std::env::vars_os() {
            if key.to_string_lossy().starts_with("AIRLOCK_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("NO_COLOR", "1");
        for (k, v) in &self.envs {
            cmd.env(k, v);
        }
        cmd
    }

    /// Starts an HTTP server on a free port and waits for its `listening on`
    /// line and the end of its first load of components.
    pub fn start_http(&self) -> HttpServer {
        let mut proc = self.spawn_http();
        let url = proc.wait_for_listening(self.start_timeout, true);
        HttpServer { proc, url }
    }

    /// Starts an HTTP server as [`Airlock::start_http`] does, but returns
    /// as soon as it listens, while it may still load its components.
    pub fn start_http_loading(&self) -> HttpServer {
        let mut proc = self.spawn_http();
        let url = proc.wait_for_listening(self.start_timeout, false);
        HttpServer { proc, url }
    }

    /// Starts an HTTP server as [`Airlock::start_http`] does, but hands over
    /// its standard output instead of draining it: nobody reads it until the
    /// caller does (e.g. `--audit-stdout` to a stalled log collector).
    pub fn start_http_keeping_stdout(&self) -> (HttpServer, ChildStdout) {
        let mut proc = self.spawn_http();
        let stdout = proc.take_stdout().expect("stdout is piped");
        let url = proc.wait_for_listening(self.start_timeout, true);
        (HttpServer { proc, url }, stdout)
    }

    fn spawn_http(&self) -> Proc {
        let mut cmd = self.command(false);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        Proc::spawn(cmd, self.tools.clone())
    }

    /// Starts a stdio server and waits until it has loaded its components
    /// (or exited: some tests expect it to refuse to start).
    pub fn start_stdio(&self) -> StdioServer {
        let mut cmd = self.command(true);
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut proc = Proc::spawn(cmd, self.tools.clone());
        proc.wait_for_load(STDIO_ANCHOR, Instant::now() + self.start_timeout);
        StdioServer::new(proc)
    }

    /// Runs an HTTP server expected to exit on its own (e.g. a bad tools
    /// directory) and returns its exit status and stderr. Panics if it starts
    /// serving its components or is still running after [`START_TIMEOUT`].
    pub fn run_expecting_exit(&self) -> (ExitStatus, String) {
        let mut cmd = self.command(false);
        cmd.stdin(Stdio::null()).stdout(Stdio::piped());
        let mut proc = Proc::spawn(cmd, self.tools.clone());
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(status) = proc.wait_timeout(Duration::ZERO) {
                return (status, proc.stderr());
            }
            let log = proc.stderr();
            // A server that says it loads its components after it listens
            // has started once that load is done; an older one once it listens.
            let started = if log.contains(LOADING) {
                log.contains(LOADED)
            } else {
                listening_url(&log).is_some()
            };
            assert!(
                !started,
                "airlock started serving but was expected to refuse to start; stderr:\n{log}"
            );
            assert!(
                Instant::now() < deadline,
                "airlock neither exited nor listened within {START_TIMEOUT:?}; stderr:\n{}",
                proc.stderr()
            );
            thread::sleep(Duration::from_millis(25));
        }
    }
}

/// Runs `airlock <args>` to completion and returns (status, stdout, stderr).
/// Panics, with what it printed, if it has not exited after
/// [`START_TIMEOUT`] (it is killed then).
pub fn run_airlock(args: &[&str]) -> (ExitStatus, String, String) {
    run_airlock_within(args, START_TIMEOUT)
}

/// [`run_airlock`] for a command that may take longer than a start, such as
/// `inspect` compiling a large component on a busy machine.
pub fn run_airlock_within(args: &[&str], timeout: Duration) -> (ExitStatus, String, String) {
    run_airlock_with_env(args, &[], timeout)
}

/// [`run_airlock_within`] with these environment variables set too.
pub fn run_airlock_with_env(
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
    timeout: Duration,
) -> (ExitStatus, String, String) {
    let run = run_to_end(args, envs, b"", timeout);
    (run.status, run.stdout, run.stderr)
}

/// [`run_airlock_with_env`] with `input` on its stdin, which then closes:
/// a stdio server's whole session.
pub fn run_airlock_with_input(
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
    input: &[u8],
    timeout: Duration,
) -> (ExitStatus, String, String) {
    let run = run_to_end(args, envs, input, timeout);
    (run.status, run.stdout, run.stderr)
}

/// A finished run of `airlock`.
pub struct Run {
    /// How it exited.
    pub status: ExitStatus,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// The most resident memory it was seen to use (`VmHWM`, looked at
    /// while it ran), in bytes.
    pub peak_memory: u64,
}

/// [`run_airlock_with_env`], telling also the most memory the process used.
pub fn run_airlock_watched(
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
    timeout: Duration,
) -> Run {
    run_to_end(args, envs, b"", timeout)
}

/// Runs `airlock <args>` with `input` on its stdin to its exit, watching
/// its peak memory; panics if it has not exited within `timeout`.
fn run_to_end(
    args: &[&str],
    envs: &[(&str, &std::path::Path)],
    input: &[u8],
    timeout: Duration,
) -> Run {
    let mut child = Command::new(airlock_bin())
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run airlock");
    {
        let mut stdin = child.stdin.take().expect("stdin is piped");
        // A process that exits without reading it all is the caller's to judge.
        let _ = std::io::Write::write_all(&mut stdin, input);
    }
    let stdout = read_all(child.stdout.take().expect("stdout is piped"));
    let stderr = read_all(child.stderr.take().expect("stderr is piped"));
    let deadline = Instant::now() + timeout;
    let mut peak_memory = 0;
    let status = loop {
        // The high-water mark only grows: the last look before the exit
        // holds all but the last few milliseconds' growth.
        peak_memory = peak_memory.max(high_water_mark(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().expect("poll airlock") {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "airlock {args:?} did not exit within {timeout:?}; stderr:\n{}",
                stderr.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    Run {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
        peak_memory,
    }
}

/// The peak resident memory of the process `pid` so far (`VmHWM`), in bytes.
fn high_water_mark(pid: u32) -> Option<u64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Reads `pipe` to its end on a thread of its own, as text.
fn read_all(mut pipe: impl Read + Send + 'static) -> JoinHandle<String> {
    thread::spawn(move || {
        let mut text = Vec::new();
        let _ = pipe.read_to_end(&mut text);
        String::from_utf8_lossy(&text).into_owned()
    })
}

/// A running airlock process whose stderr is collected; killed on drop.
pub struct Proc {
    child: Child,
    stderr: Arc<Mutex<String>>,
    reader: Option<JoinHandle<()>>,
    _tools: Option<ToolsDir>,
}

impl Proc {
    fn spawn(mut cmd: Command, tools: Option<ToolsDir>) -> Self {
        cmd.stderr(Stdio::piped());
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {:?}: {e}", cmd.get_program()));
        let stderr = Arc::new(Mutex::new(String::new()));
        let pipe = child.stderr.take().expect("stderr is piped");
        let sink = Arc::clone(&stderr);
        let reader = thread::spawn(move || {
            let mut pipe = BufReader::new(pipe);
            let mut line = Vec::new();
            loop {
                line.clear();
                match pipe.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let text = strip_ansi(&String::from_utf8_lossy(&line));
                        sink.lock().unwrap().push_str(&text);
                    }
                }
            }
        });
        Self {
            child,
            stderr,
            reader: Some(reader),
            _tools: tools,
        }
    }

    /// Everything the process wrote to stderr so far (ANSI colours removed).
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// The exit status, if the process has exited.
    pub fn try_wait(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().expect("poll the airlock process")
    }

    /// Waits until the process exits, at most `timeout`; then lets the stderr
    /// reader finish so [`Proc::stderr`] is complete.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.try_wait() {
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// The OS process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Takes the child's stdin, when piped.
    pub fn take_stdin(&mut self) -> Option<std::process::ChildStdin> {
        self.child.stdin.take()
    }

    /// Takes the child's stdout, when piped.
    pub fn take_stdout(&mut self) -> Option<std::process::ChildStdout> {
        self.child.stdout.take()
    }

    /// Waits until the log has `anchor` (a line the server prints once it
    /// answers) and the server has loaded its components, or until it
    /// exits (then returns false). The server listens before it loads its
    /// components and says so ([`LOADING`]); a server that does not say so
    /// (an older one) loaded them before it listened.
    fn wait_for_load(&mut self, anchor: &str, deadline: Instant) -> bool {
        loop {
            let log = self.stderr();
            if log.contains(anchor) && (!log.contains(LOADING) || log.contains(LOADED)) {
                return true;
            }
            if self.try_wait().is_some() {
                return false;
            }
            assert!(
                Instant::now() < deadline,
                "airlock did not finish loading its components in time; stderr:\n{log}"
            );
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits for the `listening on` line and, with `loaded`, for the end of
    /// the first load of components; returns the MCP endpoint's URL.
    fn wait_for_listening(&mut self, timeout: Duration, loaded: bool) -> String {
        let deadline = Instant::now() + timeout;
        if loaded && !self.wait_for_load("listening on", deadline) {
            // Let the reader catch the last lines.
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
            panic!(
                "airlock exited before it listened and loaded its components; stderr:\n{}",
                self.stderr()
            );
        }
        loop {
            if let Some(url) = listening_url(&self.stderr()) {
                // Drain stdout so the process never blocks writing to it.
                if let Some(mut out) = self.take_stdout() {
                    thread::spawn(move || {
                        let mut sink = Vec::new();
                        let _ = out.read_to_end(&mut sink);
                    });
                }
                return url;
            }
            if let Some(status) = self.try_wait() {
                // Let the reader catch the last lines.
                if let Some(reader) = self.reader.take() {
                    let _ = reader.join();
                }
                panic!(
                    "airlock exited with {status} before listening; stderr:\n{}",
                    self.stderr()
                );
            }
            assert!(
                Instant::now() < deadline,
                "airlock did not print `listening on` within {timeout:?}; stderr:\n{}",
                self.stderr()
            );
            thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        if thread::panicking() {
            if let Some(reader) = self.reader.take() {
                let _ = reader.join();
            }
            eprintln!(
                "---- airlock (pid {}) stderr ----\n{}---- end of airlock stderr ----",
                self.child.id(),
                self.stderr()
            );
        }
    }
}

/// What the server logs when it starts loading its components (it answers
/// meanwhile, with what has loaded so far).
pub const LOADING: &str = "loading components;";

/// What the server logs once its first load of components is done.
pub const LOADED: &str = "components loaded: ready";

/// What a stdio server logs once it answers.
const STDIO_ANCHOR: &str = "serving MCP on stdio";

/// Finds the URL in a `listening on http://…/mcp` log line.
pub fn listening_url(stderr: &str) -> Option<String> {
    stderr.lines().find_map(|line| {
        let rest = &line[line.find("listening on")?..];
        let start = rest.find("http://")?;
        let url: String = rest[start..]
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"' && *c != '\'' && *c != ',')
            .collect();
        url.contains("/mcp").then_some(url)
    })
}

/// Removes ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// An `airlock serve` listening on HTTP; killed on drop.
pub struct HttpServer {
    proc: Proc,
    url: String,
}

impl HttpServer {
    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> String {
        let rest = self.url.trim_start_matches("http://");
        rest.split('/').next().unwrap_or(rest).to_string()
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.addr()
            .rsplit(':')
            .next()
            .and_then(|p| p.parse().ok())
            .expect("a port in the listening url")
    }

    /// A client for this server (anonymous).
    pub fn client(&self) -> Http {
        Http::new(&self.url)
    }

    /// A client that sends `Authorization: Bearer <token>`.
    pub fn client_with_token(&self, token: &str) -> Http {
        Http::new(&self.url).with_bearer(token)
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.proc.stderr()
    }

    /// Waits until the server's log contains `needle` (a line is read from
    /// the process in the background, so it can arrive after the reply it
    /// belongs to); panics after the usual wait timeout.
    #[track_caller]
    pub fn wait_for_log(&self, needle: &str) {
        crate::wait_until(&format!("the log to contain {needle:?}"), || {
            let log = self.stderr();
            if log.contains(needle) {
                Ok(())
            } else {
                Err(log)
            }
        });
    }

    /// Waits until the server's log has at least `count` lines that contain
    /// every one of `needles`; returns the last such line.
    #[track_caller]
    pub fn wait_for_log_lines(&self, needles: &[&str], count: usize) -> String {
        crate::wait_until(&format!("{count} log line(s) with {needles:?}"), || {
            let stderr = self.stderr();
            let lines: Vec<&str> = stderr
                .lines()
                .filter(|line| needles.iter().all(|needle| line.contains(needle)))
                .collect();
            match lines.last() {
                Some(last) if lines.len() >= count => Ok(last.to_string()),
                _ => Err(format!("{} such line(s) in:\n{stderr}", lines.len())),
            }
        })
    }

    /// The text of `GET /metrics` of a server started with
    /// `--metrics-listen` (its address is in the log).
    pub fn scrape_metrics(&self) -> String {
        self.wait_for_log("metrics at http://");
        let log = self.stderr();
        let url: String = log
            .split("metrics at ")
            .nth(1)
            .expect("the line just waited for")
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '"')
            .collect();
        let reply = Http::new(&url).get();
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply.text()
    }

    /// Waits up to `timeout` until the server has loaded its components
    /// (it listens before: see [`Airlock::start_http_loading`]); panics if
    /// it exits or does not finish in time.
    pub fn wait_until_loaded(&mut self, timeout: Duration) {
        let loaded = self
            .proc
            .wait_for_load("listening on", Instant::now() + timeout);
        assert!(loaded, "airlock exited while loading:\n{}", self.stderr());
    }

    /// Whether the process is still running.
    pub fn is_running(&mut self) -> bool {
        self.proc.try_wait().is_none()
    }

    /// The OS process id.
    pub fn pid(&self) -> u32 {
        self.proc.id()
    }

    /// Asks the server to shut down gracefully, as a service manager does
    /// (SIGTERM).
    pub fn terminate(&self) {
        let status = Command::new("kill")
            .args(["-TERM", &self.proc.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -TERM failed: {status}");
    }

    /// Waits for the process to exit, at most `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        self.proc.wait_timeout(timeout)
    }

    /// Kills the process at once (SIGKILL): a host that dies mid-work.
    pub fn kill(&mut self) {
        let _ = self.proc.child.kill();
        self.proc.wait_timeout(Duration::from_secs(10));
    }

    /// The server's memory so far: resident now, and the most it was ever
    /// resident (Linux's `VmRSS` and `VmHWM`), in KiB.
    pub fn memory(&self) -> Memory {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.proc.id()))
            .expect("read the server's /proc status (Linux only)");
        let field = |name: &str| {
            status
                .lines()
                .find_map(|line| line.strip_prefix(name))
                .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap_or_else(|| panic!("no {name} in /proc status"))
        };
        Memory {
            resident_kib: field("VmRSS:"),
            peak_kib: field("VmHWM:"),
        }
    }

    /// Starts measuring the server's peak memory afresh: its `peak_kib`
    /// becomes what is resident now (Linux's `clear_refs`).
    pub fn reset_peak_memory(&self) {
        std::fs::write(format!("/proc/{}/clear_refs", self.proc.id()), "5")
            .expect("reset the server's peak memory (Linux only)");
    }

    /// How much the server's memory peaked above what was resident when
    /// `run` started, in KiB, and what `run` returned.
    pub fn peak_growth<T>(&self, run: impl FnOnce() -> T) -> (u64, T) {
        self.reset_peak_memory();
        let before = self.memory().resident_kib;
        let result = run();
        let peak = self.memory().peak_kib;
        (peak.saturating_sub(before), result)
    }
}

/// A process's memory, in KiB (see [`HttpServer::memory`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// Resident now.
    pub resident_kib: u64,
    /// The most ever resident.
    pub peak_kib: u64,
}
