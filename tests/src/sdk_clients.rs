//! Running the official MCP SDK clients (`tests/clients/<language>/`)
//! against the real binary: each language has a `setup` script that installs
//! its SDK into the user's cache (once; later runs reuse it) and a driver that
//! runs one flow and prints a JSON report as its last line. Both drivers take
//! the server as `--url URL` or `--stdio -- COMMAND...`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::paths::{airlock_bin, workspace_root};
use crate::server::{Airlock, HttpServer, ToolsDir};

/// How long one driver run may take before it is killed (the drivers stop
/// themselves sooner, so this only catches a hang on the way out).
pub const DRIVE_TIMEOUT: Duration = Duration::from_secs(120);

/// How a client reaches the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// Streamable HTTP, to a server the test starts.
    Http,
    /// stdio, to a server the client launches.
    Stdio,
}

/// `tests/clients/<language>`: the SDK pin, `setup` and the driver.
pub fn client_dir(language: &str) -> PathBuf {
    workspace_root()
        .join("tests")
        .join("clients")
        .join(language)
}

/// Runs `tests/clients/<language>/setup` and returns the path it prints last
/// (the installed SDK). Panics with its output when it fails.
pub fn install(language: &str) -> PathBuf {
    let mut setup = Command::new("bash");
    setup.arg(client_dir(language).join("setup"));
    installed(setup)
}

/// Runs `scripts/npm-packages dir`: installs the npm packages `dir`'s
/// `package.json` and `package-lock.json` pin into the user's cache (once;
/// later runs reuse them) and returns their `node_modules`. Panics with its
/// output when it fails.
pub fn install_npm_packages(dir: &Path) -> PathBuf {
    let mut script = Command::new("bash");
    script
        .arg(workspace_root().join("scripts").join("npm-packages"))
        .arg(dir);
    installed(script)
}

/// Runs the installer `cmd` and returns the path it prints last. Panics with
/// its output when it fails or prints no existing path.
fn installed(mut cmd: Command) -> PathBuf {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let path = stdout
        .lines()
        .rfind(|line| !line.trim().is_empty())
        .map(|line| PathBuf::from(line.trim()))
        .unwrap_or_default();
    assert!(
        path.exists(),
        "{cmd:?} printed no installed path: {stdout:?}"
    );
    path
}

/// Serves `component` over `transport` and runs `driver` (a client command
/// with its own options already set) against it; returns the JSON report it
/// prints last. Panics with the driver's output, and the HTTP server's log,
/// when the driver fails.
pub fn drive(driver: Command, transport: Transport, component: &str) -> Value {
    drive_tools(driver, transport, &ToolsDir::with(&[component]))
}

/// [`drive`], serving the components of `tools`; over stdio the client
/// starts the server itself, which compiles them as it starts (no compile
/// cache).
pub fn drive_tools(mut driver: Command, transport: Transport, tools: &ToolsDir) -> Value {
    // An HTTP server lives until the driver is done.
    let server = match transport {
        Transport::Http => {
            let server = Airlock::new(tools).start_http();
            driver.args(["--url", server.url()]);
            Some(server)
        }
        Transport::Stdio => {
            driver
                .args(["--stdio", "--"])
                .arg(airlock_bin())
                .args(["serve", "--tools"])
                .arg(tools.path())
                .args(["--stdio", "--no-cache"]);
            None
        }
    };
    report(driver, server.as_ref())
}

/// Runs `driver` against `server`, already running (its URL is given as
/// `--url`); returns the JSON report it prints last, as [`drive`] does.
pub fn drive_http(mut driver: Command, server: &HttpServer) -> Value {
    driver.args(["--url", server.url()]);
    report(driver, Some(server))
}

/// Runs `driver` and returns the JSON report it prints last; panics with its
/// output, and `server`'s log, when it fails.
fn report(driver: Command, server: Option<&HttpServer>) -> Value {
    let (ok, stdout, stderr) = run(driver);
    let server_log = server.map(HttpServer::stderr).unwrap_or_default();
    assert!(
        ok,
        "the driver failed; its stderr (a stdio server's log too):\n{stderr}{stdout}\n\
         ---- airlock stderr (HTTP) ----\n{server_log}"
    );
    let line = stdout.lines().rfind(|line| !line.trim().is_empty());
    serde_json::from_str(line.unwrap_or_default())
        .unwrap_or_else(|e| panic!("the driver printed no JSON report ({e}):\n{stdout}\n{stderr}"))
}

/// Runs `cmd` to completion, at most [`DRIVE_TIMEOUT`]; returns whether it
/// succeeded, its stdout and its stderr.
fn run(mut cmd: Command) -> (bool, String, String) {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {cmd:?}: {e}"));
    let collect = |mut pipe: Box<dyn Read + Send>| {
        thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        })
    };
    let stdout = collect(Box::new(child.stdout.take().expect("stdout is piped")));
    let stderr = collect(Box::new(child.stderr.take().expect("stderr is piped")));
    let deadline = Instant::now() + DRIVE_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the driver") {
            break Some(status);
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(20));
    };
    let (stdout, mut stderr) = (stdout.join().unwrap(), stderr.join().unwrap());
    if status.is_none() {
        stderr.push_str(&format!("\n(killed after {DRIVE_TIMEOUT:?})"));
    }
    (status.is_some_and(|s| s.success()), stdout, stderr)
}
