//! Adversarial tests: the `hostile` guest tries to get out of its sandbox
//! (files, environment, sockets, name lookups, outbound HTTP) and to
//! exhaust its limits (CPU, fuel, memory, stack, output, concurrency,
//! malformed outcomes), against the real binary.
//!
//! Every hostile call must fail cleanly: either the tool's own text shows
//! the refusal it met (`error: …`; hostile never flags `isError` itself),
//! or the host answers `isError` with a sentence naming the limit. And
//! while the hostile call runs, a well-behaved tool (the `hash` sample's
//! `sha256`) keeps answering.
//!
//! Grants come from the manifest `hostile.toml` beside `hostile.wasm`.
//! Servers that change a manifest while running poll every 50 ms.
//!
//! The `bombs` guest hands the host JSON nested deeper than clients parse,
//! listed and in its answers: refused by `--max-json-depth`, naming the
//! item, while the rest is served.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use airlock_e2e::hostile::{
    ANSWERED_WITHIN, airlock, answer, assert_limit, assert_ok, assert_refused, assert_sha256_works,
    call, serve, toml_path, tools_with,
};
use airlock_e2e::mcp::{complete, error_code, error_message, input_request, is_error, text};
use airlock_e2e::paths::{airlock_bin, component};
use airlock_e2e::stamp::replace_once;
use airlock_e2e::{
    Airlock, Http, HttpServer, McpClient, ToolCall, ToolsDir, all_caps, no_caps, wait_until,
};
use serde_json::{Value, json};

/// What a hostile call got, and how the well-behaved tool fared meanwhile.
struct Observed {
    /// The hostile call's response.
    response: Value,
    /// How long the hostile call took.
    elapsed: Duration,
    /// How many `sha256` calls were answered, correctly, while the hostile
    /// call was still running.
    answered_meanwhile: usize,
}

/// Runs the hostile call `name` with `args` on its own connection while
/// calling `sha256` in a loop (at least once) until it returns; every
/// `sha256` answer is checked.
fn while_serving(server: &HttpServer, name: &str, args: Value) -> Observed {
    let url = server.url().to_string();
    let client = server.client();
    thread::scope(|s| {
        let started = Instant::now();
        let hostile = s.spawn(move || {
            let response = call(&Http::new(&url), name, args);
            (response, started.elapsed())
        });
        let mut answered_meanwhile = 0;
        loop {
            assert_sha256_works(&client);
            if hostile.is_finished() {
                break;
            }
            answered_meanwhile += 1;
            assert!(
                started.elapsed() < ANSWERED_WITHIN,
                "the hostile `{name}` call was not stopped within {ANSWERED_WITHIN:?}"
            );
            thread::sleep(Duration::from_millis(5));
        }
        let (response, elapsed) = hostile.join().expect("the hostile call's thread");
        Observed {
            response,
            elapsed,
            answered_meanwhile,
        }
    })
}

/// A hostile call that runs for a while (spin, sleep) must have let
/// `sha256` answer during it.
#[track_caller]
fn assert_others_answered(observed: &Observed) {
    assert!(
        observed.answered_meanwhile > 0,
        "sha256 was not answered while the hostile call ran for {:?}",
        observed.elapsed
    );
}

/// The `hostile` call `bad` fails with a host error naming `words`, while
/// `sha256` keeps answering; then `good` (a harmless call of the same
/// tool) answers exactly `expected`, the server is still up, and `sha256`
/// still works. Returns what the bad call got.
#[track_caller]
fn fails_alone(
    server: &mut HttpServer,
    tool: &str,
    bad: Value,
    words: &[&str],
    good: Value,
    expected: &str,
) -> Observed {
    let observed = while_serving(server, tool, bad);
    assert_limit(&observed.response, words);
    assert!(server.is_running(), "the server must survive `{tool}`");
    let client = server.client();
    let response = call(&client, tool, good);
    assert_eq!(answer(&response), expected, "{response}");
    assert_sha256_works(&client);
    observed
}

/// The log lines of `stderr` that contain every one of `needles`.
fn log_lines<'a>(stderr: &'a str, needles: &[&str]) -> Vec<&'a str> {
    stderr
        .lines()
        .filter(|line| needles.iter().all(|n| line.contains(n)))
        .collect()
}

/// How many reloads the server has finished.
fn reloads(server: &HttpServer) -> usize {
    log_lines(&server.stderr(), &["reloaded"]).len()
}

/// Publishes `text` as `hostile.toml` the safe way (temporary name, then
/// rename) and waits until the server has reloaded.
#[track_caller]
fn change_manifest(server: &HttpServer, tools: &ToolsDir, text: Option<&str>) {
    let before = reloads(server);
    let manifest = tools.path().join("hostile.toml");
    match text {
        Some(text) => {
            let partial = tools.path().join(".hostile.toml.partial");
            std::fs::write(&partial, text).expect("write the manifest");
            std::fs::rename(&partial, &manifest).expect("rename the manifest into place");
        }
        None => std::fs::remove_file(&manifest).expect("remove the manifest"),
    }
    wait_until("a reload after the manifest changed", || {
        let now = reloads(server);
        if now > before {
            Ok(())
        } else {
            Err(format!("{now} reloads"))
        }
    });
}

/// A directory to grant: `<root>/data` holding `allowed.txt`, with
/// `<root>/secret.txt` beside it (outside the grant) and a symbolic link
/// `data/link.txt` pointing at it (the e2e tests run on Unix).
struct Granted {
    root: tempfile::TempDir,
}

impl Granted {
    const ALLOWED: &'static str = "allowed-content-e2e";
    const SECRET: &'static str = "outside-secret-e2e";

    fn new() -> Self {
        let root = tempfile::Builder::new()
            .prefix("airlock-grant-")
            .tempdir()
            .expect("a temporary directory");
        std::fs::create_dir(root.path().join("data")).unwrap();
        std::fs::write(root.path().join("data/allowed.txt"), Self::ALLOWED).unwrap();
        std::fs::write(root.path().join("secret.txt"), Self::SECRET).unwrap();
        std::os::unix::fs::symlink(
            root.path().join("secret.txt"),
            root.path().join("data/link.txt"),
        )
        .unwrap();
        Granted { root }
    }

    fn data(&self) -> PathBuf {
        self.root.path().join("data")
    }

    fn manifest(&self, mode: &str) -> String {
        format!(
            "[[dirs]]\nhost = {}\nguest = \"/data\"\nmode = \"{mode}\"\n",
            toml_path(&self.data())
        )
    }
}

/// The escapes every file test tries: none may show a byte of `secret`.
fn assert_escapes_refused(client: &dyn McpClient, granted: &Granted, tools: &ToolsDir) {
    let host_path = |path: PathBuf| path.to_string_lossy().into_owned();
    for path in [
        "/data/../secret.txt".to_owned(),
        "/data/../../etc/passwd".to_owned(),
        "/data/link.txt".to_owned(),
        "/secret.txt".to_owned(),
        "../secret.txt".to_owned(),
        host_path(granted.root.path().join("secret.txt")),
        host_path(granted.data().join("allowed.txt")),
        "/etc/passwd".to_owned(),
        host_path(tools.path().join("hostile.toml")),
    ] {
        let said = assert_refused(
            &call(client, "read_file", json!({ "path": path })),
            &format!("reading {path}"),
        );
        assert!(!said.contains(Granted::SECRET), "{path} leaked: {said}");
        assert!(!said.contains("root:"), "{path} leaked: {said}");
    }
    for path in ["/data/..", "/", "/data/../.."] {
        assert_refused(
            &call(client, "list_dir", json!({ "path": path })),
            &format!("listing {path}"),
        );
    }
}

// ---------------------------------------------------------------------------
// Files
// ---------------------------------------------------------------------------

#[test]
fn without_a_manifest_no_file_is_visible() {
    let tools = tools_with(None);
    std::fs::write(tools.path().join("secret.txt"), "tools-dir-secret-e2e").unwrap();
    let server = serve(&tools, &[]);
    let client = server.client();
    let tools_dir = tools.path().to_string_lossy().into_owned();
    let in_tools = |name: &str| tools.path().join(name).to_string_lossy().into_owned();
    for path in [
        "/etc/passwd".to_owned(),
        "/".to_owned(),
        ".".to_owned(),
        "secret.txt".to_owned(),
        tools_dir.clone(),
        in_tools("secret.txt"),
        in_tools("hostile.wasm"),
    ] {
        let observed = while_serving(&server, "read_file", json!({ "path": path }));
        let said = assert_refused(&observed.response, &format!("reading {path}"));
        assert!(!said.contains("root:"), "{path} leaked: {said}");
        assert!(
            !said.contains("tools-dir-secret-e2e"),
            "{path} leaked: {said}"
        );
    }
    for path in ["/", ".", tools_dir.as_str(), "/tmp"] {
        assert_refused(
            &call(&client, "list_dir", json!({ "path": path })),
            &format!("listing {path}"),
        );
    }
    for path in [
        in_tools("planted.txt"),
        "/tmp/airlock-planted-e2e.txt".to_owned(),
    ] {
        assert_refused(
            &call(
                &client,
                "write_file",
                json!({ "path": path, "text": "planted" }),
            ),
            &format!("writing {path}"),
        );
        assert!(!Path::new(&path).exists(), "{path} was written");
    }
    assert_sha256_works(&client);
}

#[test]
fn a_read_only_grant_reads_inside_and_nothing_else() {
    let granted = Granted::new();
    let tools = tools_with(Some(&granted.manifest("read-only")));
    let server = serve(&tools, &[]);
    let client = server.client();

    let observed = while_serving(&server, "read_file", json!({"path": "/data/allowed.txt"}));
    assert_ok(&observed.response, Granted::ALLOWED);
    assert_ok(
        &call(&client, "list_dir", json!({"path": "/data"})),
        "allowed.txt,link.txt",
    );
    assert_escapes_refused(&client, &granted, &tools);

    // Read-only: no new file, no overwrite.
    for path in ["/data/new.txt", "/data/allowed.txt"] {
        assert_refused(
            &call(
                &client,
                "write_file",
                json!({"path": path, "text": "overwritten"}),
            ),
            &format!("writing {path} under a read-only grant"),
        );
    }
    assert!(
        !granted.data().join("new.txt").exists(),
        "new.txt was created"
    );
    assert_eq!(
        std::fs::read_to_string(granted.data().join("allowed.txt")).unwrap(),
        Granted::ALLOWED,
        "allowed.txt was overwritten"
    );
    assert_sha256_works(&client);
}

#[test]
fn a_read_write_grant_writes_inside_and_nowhere_else() {
    let granted = Granted::new();
    let tools = tools_with(Some(&granted.manifest("read-write")));
    let server = serve(&tools, &[]);
    let client = server.client();

    let observed = while_serving(
        &server,
        "write_file",
        json!({"path": "/data/out.txt", "text": "written-by-the-guest"}),
    );
    assert_ok(&observed.response, "wrote 20 bytes");
    assert_eq!(
        std::fs::read_to_string(granted.data().join("out.txt")).unwrap(),
        "written-by-the-guest",
        "the file written at /data/out.txt must appear in the granted host directory"
    );
    assert_ok(
        &call(&client, "read_file", json!({"path": "/data/out.txt"})),
        "written-by-the-guest",
    );

    // Writing out of the grant: through `..`, through the link, at a
    // host path.
    let escaped = granted.root.path().join("escaped.txt");
    for path in [
        "/data/../escaped.txt".to_owned(),
        "/escaped.txt".to_owned(),
        escaped.to_string_lossy().into_owned(),
        "/data/link.txt".to_owned(),
    ] {
        assert_refused(
            &call(
                &client,
                "write_file",
                json!({"path": path, "text": "escaped"}),
            ),
            &format!("writing {path}"),
        );
    }
    assert!(!escaped.exists(), "a file was written outside the grant");
    assert_eq!(
        std::fs::read_to_string(granted.root.path().join("secret.txt")).unwrap(),
        Granted::SECRET,
        "the file behind the link was overwritten"
    );
    assert_escapes_refused(&client, &granted, &tools);
    assert_sha256_works(&client);
}

// ---------------------------------------------------------------------------
// Environment
// ---------------------------------------------------------------------------

#[test]
fn without_a_manifest_the_environment_is_empty() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .env("AIRLOCK_E2E_SECRET", "hunter2-e2e")
        .env("AIRLOCK_TEST_REGION", "eu-e2e")
        .start_http();
    let client = server.client();
    let observed = while_serving(&server, "env_all", json!({}));
    assert_ok(&observed.response, "");
    for name in [
        "PATH",
        "HOME",
        "AIRLOCK_E2E_SECRET",
        "AIRLOCK_TEST_REGION",
        "NO_COLOR",
    ] {
        let said = assert_refused(
            &call(&client, "env", json!({ "name": name })),
            &format!("reading ${name}"),
        );
        assert!(!said.contains("hunter2-e2e"), "{said}");
    }
}

#[test]
fn a_manifest_grants_exactly_its_variables() {
    const SECRET: &str = "s3cret-token-e2e";
    let secrets = tempfile::NamedTempFile::new().expect("a secrets file");
    std::fs::write(
        secrets.path(),
        format!("api = \"{SECRET}\"\nunused = \"never-granted-e2e\"\n"),
    )
    .unwrap();
    let tools = tools_with(Some(
        r#"
[env]
GREETING = { value = "hi" }
REGION = { from-env = "AIRLOCK_TEST_REGION" }
TOKEN = { secret = "api" }
"#,
    ));
    let server = airlock(&tools)
        .arg("--secrets-file")
        .arg(secrets.path())
        .env("AIRLOCK_TEST_REGION", "eu-e2e")
        .env("AIRLOCK_E2E_SECRET", "hunter2-e2e")
        .start_http();
    let client = server.client();

    let observed = while_serving(&server, "env_all", json!({}));
    assert_ok(&observed.response, "GREETING,REGION,TOKEN");
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hi");
    assert_ok(&call(&client, "env", json!({"name": "REGION"})), "eu-e2e");
    assert_ok(&call(&client, "env", json!({"name": "TOKEN"})), SECRET);
    for name in [
        "PATH",
        "HOME",
        "AIRLOCK_TEST_REGION",
        "AIRLOCK_E2E_SECRET",
        "api",
        "unused",
    ] {
        assert_refused(
            &call(&client, "env", json!({ "name": name })),
            &format!("reading ${name}"),
        );
    }
    assert_sha256_works(&client);
    let log = server.stderr();
    assert!(
        !log.contains(SECRET),
        "a secret value must never be logged:\n{log}"
    );
}

// ---------------------------------------------------------------------------
// Sockets and name lookups
// ---------------------------------------------------------------------------

#[test]
fn sockets_and_name_lookups_are_refused_whatever_the_manifest_says() {
    // A real listener: had a connection got through, it would be waiting.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let target = listener.local_addr().unwrap();
    let port = target.port();
    let tools = tools_with(Some(&format!(
        "[http]\nallow = [\"127.0.0.1:{port}\", \"localhost:{port}\", \"example.com\"]\n"
    )));
    let server = serve(&tools, &[]);
    let client = server.client();

    for addr in [
        target.to_string(),
        format!("localhost:{port}"),
        "example.com:80".to_owned(),
    ] {
        let observed = while_serving(&server, "connect", json!({ "addr": addr }));
        assert_refused(&observed.response, &format!("connecting to {addr}"));
    }
    for host in ["localhost", "example.com"] {
        let said = assert_refused(
            &call(&client, "resolve", json!({ "host": host })),
            &format!("looking up {host}"),
        );
        assert!(!said.contains("127.0.0.1"), "{host} was resolved: {said}");
    }
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Ok((_, from)) => panic!("the guest reached the listener from {from}"),
        Err(e) => panic!("accept on the test listener: {e}"),
    }
    assert_sha256_works(&client);
}

// ---------------------------------------------------------------------------
// Outbound HTTP
// ---------------------------------------------------------------------------

#[test]
fn outbound_http_reaches_only_the_listed_destinations() {
    let tools = tools_with(None);
    let server = serve(&tools, &[]);
    let client = server.client();
    let port = server.port();
    let own = format!("http://127.0.0.1:{port}/mcp");

    // No manifest: no wasi:http at all; using it fails the call.
    let observed = while_serving(&server, "http_get", json!({ "url": own }));
    assert_limit(&observed.response, &["wasi:http", "not granted"]);

    // Grant this very server: GET /mcp answers 405, which proves the
    // request went out.
    change_manifest(
        &server,
        &tools,
        Some(&format!("[http]\nallow = [\"127.0.0.1:{port}\"]\n")),
    );
    let observed = while_serving(&server, "http_get", json!({ "url": own }));
    assert_eq!(
        answer(&observed.response),
        "status 405",
        "{}",
        observed.response
    );

    // Anything else is denied: another port, another name for the same
    // host, another host, another scheme's default port.
    for url in [
        "http://127.0.0.1:1/".to_owned(),
        format!("http://localhost:{port}/mcp"),
        "https://127.0.0.1/mcp".to_owned(),
        "http://127.0.0.1/".to_owned(),
        "https://example.com/".to_owned(),
        "http://example.com/".to_owned(),
    ] {
        let said = answer(&call(&client, "http_get", json!({ "url": url })));
        assert_eq!(said, "error: HTTP-request-denied", "GET {url}");
    }
    let log = server.stderr();
    for refused in ["http://127.0.0.1:1/", "https://example.com/"] {
        assert_eq!(
            log_lines(&log, &["outbound HTTP refused", refused]).len(),
            1,
            "one log line should name the refused {refused}:\n{log}"
        );
    }
    assert_sha256_works(&client);
}

// ---------------------------------------------------------------------------
// Limits
// ---------------------------------------------------------------------------

#[test]
fn a_spinning_guest_hits_the_deadline() {
    let mut server = serve(&tools_with(None), &["--call-timeout", "1s"]);
    let observed = fails_alone(
        &mut server,
        "spin",
        json!({}),
        &["1 s time limit"],
        json!({"ms": 10}),
        "ok: spun 10 ms",
    );
    assert_others_answered(&observed);
    assert!(
        observed.elapsed >= Duration::from_millis(1000),
        "stopped before its deadline ({:?})",
        observed.elapsed
    );
}

#[test]
fn a_spinning_guest_runs_out_of_fuel() {
    let tools = tools_with(Some("[limits]\nfuel = 1000000\n"));
    // A long deadline: fuel, not time, must stop it.
    let mut server = serve(&tools, &["--enable-fuel", "--call-timeout", "20s"]);
    let observed = fails_alone(
        &mut server,
        "spin",
        json!({}),
        &["fuel", "1000000"],
        json!({"ms": 0}),
        "ok: spun 0 ms",
    );
    assert!(
        observed.elapsed < Duration::from_secs(10),
        "a million units of fuel take far less than the deadline ({:?})",
        observed.elapsed
    );
}

#[test]
fn the_manifest_timeout_replaces_the_server_default() {
    let tools = tools_with(Some("[limits]\ntimeout = \"300ms\"\n"));
    let mut server = serve(&tools, &["--call-timeout", "20s"]);
    let observed = fails_alone(
        &mut server,
        "spin",
        json!({}),
        &["300 ms time limit"],
        json!({"ms": 10}),
        "ok: spun 10 ms",
    );
    assert_others_answered(&observed);
    assert!(
        observed.elapsed >= Duration::from_millis(300) && observed.elapsed < Duration::from_secs(5),
        "stopped after {:?}, not at its 300 ms",
        observed.elapsed
    );
    let said = text(complete(&observed.response));
    assert!(!said.contains("20 s"), "the server default leaked: {said}");
}

#[test]
fn memory_beyond_the_manifest_cap_fails_alone() {
    let tools = tools_with(Some("[limits]\nmemory = \"16MiB\"\n"));
    let mut server = serve(&tools, &[]);
    fails_alone(
        &mut server,
        "alloc",
        json!({"mib": 32}),
        &["16 MiB memory limit"],
        json!({"mib": 4}),
        "ok: allocated 4 MiB (1024 pages)",
    );
}

#[test]
fn memory_beyond_the_server_cap_fails_alone() {
    let mut server = serve(&tools_with(None), &["--max-memory", "32MiB"]);
    fails_alone(
        &mut server,
        "alloc",
        json!({"mib": 64}),
        &["32 MiB memory limit"],
        json!({"mib": 8}),
        "ok: allocated 8 MiB (2048 pages)",
    );
}

#[test]
fn unbounded_recursion_traps_alone() {
    let mut server = serve(&tools_with(None), &[]);
    fails_alone(
        &mut server,
        "recurse",
        json!({"depth": 1_000_000_000_000u64}),
        &["crashed", "trap"],
        json!({"depth": 1000}),
        "ok: reached depth 1000",
    );
    let log = server.stderr();
    assert_eq!(
        log_lines(&log, &["call failed", "recurse", "call stack exhausted"]).len(),
        1,
        "the log should say the stack overflowed:\n{log}"
    );
}

#[test]
fn output_beyond_the_manifest_limit_fails_alone() {
    let tools = tools_with(Some("[limits]\nmax-output = \"8KiB\"\n"));
    let mut server = serve(&tools, &[]);
    let client = server.client();
    fails_alone(
        &mut server,
        "huge_output",
        json!({"kib": 64}),
        &["8 KiB output limit"],
        json!({"kib": 0}),
        "",
    );
    let response = call(&client, "huge_output", json!({"kib": 4}));
    assert_eq!(answer(&response).len(), 4 << 10);
}

#[test]
fn malformed_outcomes_fail_alone() {
    let mut server = serve(&tools_with(None), &[]);
    for (kind, why) in [
        ("structured", "json"),
        ("empty_input", "without any request or state"),
        ("bad_schema", "requestedSchema"),
    ] {
        let observed = fails_alone(
            &mut server,
            "malformed",
            json!({ "kind": kind }),
            &["malformed", "invalid outcome", why],
            json!({"kind": "valid"}),
            "ok: well-formed",
        );
        assert!(
            observed.elapsed < ANSWERED_WITHIN,
            "{kind}: {:?}",
            observed.elapsed
        );
    }
}

#[test]
fn max_concurrent_one_never_runs_two_calls_at_once() {
    // Room for both in turn: the second waits for the first.
    let tools = tools_with(Some("[limits]\nmax-concurrent = 1\ntimeout = \"5s\"\n"));
    let server = serve(&tools, &[]);
    let url = server.url().to_string();
    let started = Instant::now();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || call(&Http::new(&url), "sleep", json!({"ms": 600})))
        })
        .collect();
    // Another component is not held up by hostile's limit.
    let client = server.client();
    let during = Instant::now();
    assert_sha256_works(&client);
    assert!(
        during.elapsed() < Duration::from_millis(500),
        "sha256 waited for hostile's slot ({:?})",
        during.elapsed()
    );
    for sleeper in sleepers {
        assert_ok(&sleeper.join().unwrap(), "slept 600");
    }
    assert!(
        started.elapsed() >= Duration::from_millis(1200),
        "with max-concurrent = 1 the two sleeps ran side by side ({:?})",
        started.elapsed()
    );
}

#[test]
fn max_concurrent_one_times_out_a_call_that_cannot_get_its_turn() {
    // No room for both in turn: the second waits past its deadline.
    let tools = tools_with(Some("[limits]\nmax-concurrent = 1\ntimeout = \"1s\"\n"));
    let server = serve(&tools, &["--call-timeout", "20s"]);
    let url = server.url().to_string();
    let sleepers: Vec<_> = (0..2)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || call(&Http::new(&url), "sleep", json!({"ms": 700})))
        })
        .collect();
    let responses: Vec<Value> = sleepers.into_iter().map(|s| s.join().unwrap()).collect();
    let ok = responses
        .iter()
        .filter(|r| !is_error(complete(r)) && text(complete(r)) == "ok: slept 700")
        .count();
    assert_eq!(
        ok, 1,
        "exactly one sleep may run; had both run side by side, both would have finished: {responses:?}"
    );
    let failed = responses
        .iter()
        .find(|r| is_error(complete(r)))
        .expect("the other call timed out");
    assert_limit(failed, &["1 s time limit"]);
    assert_sha256_works(&server.client());
}

// ---------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------

/// Broken manifests: (component name, manifest, what its one log line
/// must name besides the manifest file).
const BROKEN: &[(&str, &str, &[&str])] = &[
    ("unknown_key", "[limits]\nmemroy = \"1MiB\"\n", &["memroy"]),
    (
        "old_unit_key",
        "[limits]\nmemory-mib = 16\n",
        &["memory-mib", "memory = \"32MiB\""],
    ),
    (
        "no_unit",
        "[limits]\ntimeout = 300\n",
        &["timeout", "no unit"],
    ),
    ("unknown_section", "[network]\nallow = true\n", &["network"]),
    ("bad_type", "[limits]\ntimeout = \"soon\"\n", &["timeout"]),
    (
        "bad_mode",
        "[[dirs]]\nhost = \"/tmp\"\nguest = \"/t\"\nmode = \"all\"\n",
        &["mode"],
    ),
    ("zero_memory", "[limits]\nmemory = \"0B\"\n", &["memory"]),
    (
        "over_the_cap",
        "[limits]\nmemory = \"100GiB\"\n",
        &["memory", "--max-memory"],
    ),
    (
        "missing_dir",
        "[[dirs]]\nhost = \"/nonexistent/airlock-e2e\"\nguest = \"/data\"\n",
        &["[[dirs]]", "host", "/nonexistent/airlock-e2e"],
    ),
    (
        "missing_secret",
        "[env]\nTOKEN = { secret = \"absent\" }\n",
        &["TOKEN", "absent"],
    ),
    (
        "unset_from_env",
        "[env]\nREGION = { from-env = \"AIRLOCK_E2E_SURELY_UNSET\" }\n",
        &["REGION", "AIRLOCK_E2E_SURELY_UNSET"],
    ),
    (
        "fuel_without_flag",
        "[limits]\nfuel = 1000\n",
        &["fuel", "--enable-fuel"],
    ),
    (
        "http_url",
        "[http]\nallow = [\"https://example.com/\"]\n",
        &["[http]", "allow"],
    ),
];

#[test]
fn broken_manifests_skip_their_component_and_others_serve() {
    let tools = ToolsDir::with(&["hash"]);
    let secrets = tempfile::NamedTempFile::new().expect("a secrets file");
    std::fs::write(secrets.path(), "api = \"present\"\n").unwrap();
    for (name, manifest, _) in BROKEN {
        tools.add_as("hostile", &format!("{name}.wasm"));
        tools.add_bytes(&format!("{name}.toml"), manifest.as_bytes());
    }
    let server = airlock(&tools)
        .arg("--secrets-file")
        .arg(secrets.path())
        .start_http();
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"], "only hash may load");
    assert_sha256_works(&client);

    let log = server.stderr();
    let mut problems = Vec::new();
    for (name, _, keys) in BROKEN {
        let manifest = format!("{name}.toml");
        let lines = log_lines(&log, &["skipping component", &manifest]);
        if lines.len() != 1 {
            problems.push(format!("{manifest}: {} skip lines", lines.len()));
            continue;
        }
        for key in *keys {
            if !lines[0].contains(key) {
                problems.push(format!(
                    "{manifest}: the line does not name {key:?}: {}",
                    lines[0]
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn a_manifest_error_names_the_line_of_the_key() {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_as("hostile", "hostile.wasm");
    tools.add_bytes(
        "hostile.toml",
        b"# line 1\n[limits]\ntimeout = \"300ms\"\nmemroy = 1\n",
    );
    let server = airlock(&tools).start_http();
    let log = server.stderr();
    let lines = log_lines(&log, &["skipping component", "memroy"]);
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains("hostile.toml:4:"),
        "`memroy` is on line 4 of the manifest: {}",
        lines[0]
    );
}

#[test]
fn a_broken_manifest_fixed_while_running_loads() {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_as("hostile", "hostile.wasm");
    tools.add_bytes("hostile.toml", b"[limits]\nmemroy = \"16MiB\"\n");
    let server = serve(&tools, &[]);
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"]);
    change_manifest(&server, &tools, Some("[limits]\nmemory = \"16MiB\"\n"));
    assert!(
        client.tool_names().contains(&"read_file".to_owned()),
        "hostile must load once its manifest is fixed"
    );
    assert_limit(
        &call(&client, "alloc", json!({"mib": 32})),
        &["16 MiB memory limit"],
    );
}

#[test]
fn manifest_changes_while_running_take_effect() {
    let tools = tools_with(None);
    let server = serve(&tools, &[]);
    let client = server.client();
    assert_ok(&call(&client, "env_all", json!({})), "");

    // Added.
    change_manifest(
        &server,
        &tools,
        Some("[env]\nGREETING = { value = \"hi\" }\n"),
    );
    assert_ok(&call(&client, "env_all", json!({})), "GREETING");
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hi");

    // Changed.
    change_manifest(
        &server,
        &tools,
        Some("[env]\nGREETING = { value = \"hello\" }\nOTHER = { value = \"2\" }\n"),
    );
    assert_ok(&call(&client, "env_all", json!({})), "GREETING,OTHER");
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hello");

    // Broken (a secret without a secrets file, then a typo): the last good
    // version keeps serving, and an error line says why, naming the
    // manifest (and the line of the typo).
    change_manifest(
        &server,
        &tools,
        Some("[env]\nGREETING = { secret = \"absent\" }\n"),
    );
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hello");
    assert_sha256_works(&client);
    change_manifest(
        &server,
        &tools,
        Some("[env]\nGREETING = { value = \"hey\" }\n\n[limits]\nmemroy = \"16MiB\"\n"),
    );
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hello");
    let log = server.stderr();
    let kept = ["ERROR", "keeping the previous version", "hostile.toml"];
    assert!(
        !log_lines(&log, &[&kept[..], &["GREETING", "secret"]].concat()).is_empty(),
        "{log}"
    );
    assert!(
        !log_lines(&log, &[&kept[..], &["hostile.toml:5:", "memroy"]].concat()).is_empty(),
        "{log}"
    );

    // Fixed: the new version serves.
    change_manifest(
        &server,
        &tools,
        Some("[env]\nGREETING = { value = \"hey\" }\n"),
    );
    assert_ok(&call(&client, "env", json!({"name": "GREETING"})), "hey");

    // Removed: nothing granted again.
    change_manifest(&server, &tools, None);
    assert_ok(&call(&client, "env_all", json!({})), "");
}

// ---------------------------------------------------------------------------
// airlock inspect
// ---------------------------------------------------------------------------

/// Runs `airlock inspect <component> <args>` with `envs` (and no other
/// AIRLOCK_* variable); returns (status, stdout, stderr).
fn inspect(component: &Path, args: &[&str], envs: &[(&str, &str)]) -> (ExitStatus, String, String) {
    let mut cmd = Command::new(airlock_bin());
    cmd.arg("inspect").arg(component).args(args);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AIRLOCK_") {
            cmd.env_remove(key);
        }
    }
    cmd.env("NO_COLOR", "1").envs(envs.iter().copied());
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .expect("run airlock inspect");
    (
        out.status,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The lines of `report` that start with `policy: `, without it.
fn policy_lines(report: &str) -> Vec<&str> {
    report
        .lines()
        .filter_map(|line| line.strip_prefix("policy: "))
        .collect()
}

/// `airlock inspect` uses the compile cache `airlock serve` uses by
/// default: the first inspect of a component compiles it and stores the
/// artifact, the second loads it from there.
#[test]
fn a_second_inspect_loads_the_component_from_the_compile_cache() {
    let tools = ToolsDir::with(&["hash"]);
    let component = tools.path().join("hash.wasm");
    let home = tempfile::tempdir().unwrap();
    let xdg = [("XDG_CACHE_HOME", home.path().to_str().unwrap())];
    let cache = home.path().join("airlock");
    let artifacts = || {
        std::fs::read_dir(&cache)
            .map(|entries| {
                entries
                    .flatten()
                    .filter(|e| e.path().extension().is_some_and(|ext| ext == "cwasm"))
                    .count()
            })
            .unwrap_or(0)
    };
    let (status, first, stderr) = inspect(&component, &[], &xdg);
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        first
            .lines()
            .any(|l| l.starts_with("compile: ") && l.contains(" ms ")),
        "{first}"
    );
    assert_eq!(artifacts(), 1, "the artifact is stored");
    let (status, second, stderr) = inspect(&component, &[], &xdg);
    assert!(status.success(), "{status}: {stderr}");
    let loaded = format!(
        "compile: loaded from the compile cache in {}",
        cache.display()
    );
    assert!(second.lines().any(|l| l == loaded), "{second}");
    assert!(!stderr.contains("compiling"), "{stderr}");
}

#[test]
fn inspect_prints_exports_tools_and_the_effective_policy() {
    const SECRET: &str = "inspect-secret-e2e";
    const REGION: &str = "inspect-region-e2e";
    let granted = Granted::new();
    let tools = ToolsDir::with(&["hostile"]);
    let component = tools.path().join("hostile.wasm");
    let secrets = tempfile::NamedTempFile::new().expect("a secrets file");
    std::fs::write(secrets.path(), format!("api = \"{SECRET}\"\n")).unwrap();
    let secrets_path = secrets.path().to_str().unwrap();

    // No manifest: nothing granted, the defaults given.
    let (status, report, stderr) = inspect(&component, &["--max-memory", "48MiB"], &[]);
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        report
            .lines()
            .any(|l| l.starts_with("exports: ") && l.contains("tools")),
        "{report}"
    );
    for tool in [
        "read_file",
        "write_file",
        "list_dir",
        "env",
        "env_all",
        "connect",
        "resolve",
        "http_get",
        "recurse",
        "spin",
        "alloc",
        "huge_output",
        "malformed",
        "sleep",
    ] {
        assert!(
            report
                .lines()
                .any(|l| l.starts_with(&format!("tool {tool}: "))),
            "tool {tool} missing:\n{report}"
        );
    }
    let policy = policy_lines(&report);
    for expected in [
        "files: none",
        "environment: none",
        "outbound HTTP: none",
        "sockets: none",
    ] {
        assert!(
            policy.contains(&expected),
            "{expected:?} missing:\n{report}"
        );
    }
    assert!(
        policy.iter().any(|l| l.starts_with("limits: memory 48MiB")),
        "{report}"
    );

    // Everything granted.
    tools.add_bytes(
        "hostile.toml",
        format!(
            r#"{dirs}
[env]
GREETING = {{ value = "hi" }}
REGION = {{ from-env = "AIRLOCK_TEST_REGION" }}
TOKEN = {{ secret = "api" }}

[http]
allow = ["127.0.0.1:8080", "example.com"]

[limits]
memory = "16MiB"
timeout = "300ms"
fuel = 1000000
max-output = "8KiB"
max-concurrent = 2
"#,
            dirs = granted.manifest("read-write")
        )
        .as_bytes(),
    );
    let (status, report, stderr) = inspect(
        &component,
        &["--secrets-file", secrets_path, "--enable-fuel"],
        &[("AIRLOCK_TEST_REGION", REGION)],
    );
    assert!(status.success(), "{status}: {stderr}");
    let policy = policy_lines(&report);
    let data = granted.data().canonicalize().unwrap();
    for expected in [
        format!("files: {} as /data (read-write)", data.display()),
        "environment: GREETING, REGION, TOKEN".to_owned(),
        "outbound HTTP: 127.0.0.1:8080, example.com".to_owned(),
        "sockets: none".to_owned(),
        "limits: memory 16MiB, timeout 300ms, output 8KiB, fuel 1000000, concurrent 2".to_owned(),
    ] {
        assert!(
            policy.contains(&expected.as_str()),
            "{expected:?} missing:\n{report}"
        );
    }
    assert!(
        policy
            .iter()
            .any(|l| l.starts_with("manifest: ") && l.contains("hostile.toml")),
        "{report}"
    );
    for value in [SECRET, REGION] {
        assert!(
            !report.contains(value) && !stderr.contains(value),
            "inspect must print names, never values ({value}):\n{report}{stderr}"
        );
    }

    // Broken: non-zero, with the reason.
    tools.add_bytes("hostile.toml", b"[limits]\nmemroy = \"1MiB\"\n");
    let (status, report, stderr) = inspect(&component, &[], &[]);
    assert!(
        !status.success(),
        "a broken manifest must fail inspect:\n{report}"
    );
    assert!(
        stderr.contains("hostile.toml") && stderr.contains("memroy"),
        "the reason should name the manifest and the key: {stderr}"
    );

    // A grant that needs a flag the command line lacks.
    tools.add_bytes("hostile.toml", b"[limits]\nfuel = 1000\n");
    let (status, _, stderr) = inspect(&component, &[], &[]);
    assert!(!status.success());
    assert!(stderr.contains("--enable-fuel"), "{stderr}");
}

// ---------------------------------------------------------------------------
// JSON nested deeper than --max-json-depth (the `bombs` guest).
// ---------------------------------------------------------------------------

/// The placeholder of the depth of the `bombs` guest's listed `_meta`.
const LISTED_DEPTH: &str = "bombs-listed-meta-depth:000001";

/// A copy of the `bombs` guest whose tool lists a `_meta` `depth` levels
/// deep.
fn bombs_listing_meta_of_depth(depth: usize) -> Vec<u8> {
    let guest = std::fs::read(component("bombs")).expect("read the bombs component");
    let stamped = format!("bombs-listed-meta-depth:{depth:06}");
    replace_once(&guest, LISTED_DEPTH.as_bytes(), stamped.as_bytes())
}

/// A server on `hash` and a copy of `bombs` whose listed `_meta` is
/// `depth` deep, with `args`.
fn serve_bombs(listed_depth: usize, args: &[&str]) -> (ToolsDir, HttpServer) {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_bytes("bombs.wasm", &bombs_listing_meta_of_depth(listed_depth));
    let server = Airlock::new(&tools).args(args).start_http();
    (tools, server)
}

/// The depth of the deepest array or object in `value`.
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

#[test]
fn a_listed_meta_nested_too_deep_keeps_its_component_out_naming_it() {
    // One level over the default, and far past what any client parses.
    for depth in [65, 100_000] {
        let (_tools, server) = serve_bombs(depth, &[]);
        let line = server.wait_for_log_lines(&["skipping component", "bombs.wasm"], 1);
        assert!(
            line.contains(
                "tool `nested`: _meta nests arrays and objects deeper than 64 levels \
                 (--max-json-depth)"
            ),
            "{depth}: {line}"
        );
        // tools/list stays parseable, and the other component serves.
        let client = server.client();
        assert_eq!(client.tool_names(), ["sha256"], "{depth}");
        airlock_e2e::flows::sha256(&client);
    }
    // At the limit it is served; the limit is a setting.
    let (_tools, server) = serve_bombs(64, &[]);
    assert_eq!(server.client().tool_names(), ["nested", "sha256"]);
    let (_tools, server) = serve_bombs(100, &["--max-json-depth", "100"]);
    let tools = server.client().list_all("tools/list", "tools");
    let nested = tools
        .iter()
        .find(|t| t["name"] == "nested")
        .expect("nested");
    assert_eq!(depth_of(&nested["_meta"]), 100);
}

#[test]
fn answers_nested_too_deep_fail_their_call_naming_the_value() {
    let (_tools, server) = serve_bombs(1, &[]);
    let client = server.client();
    let nested = |depth: usize, place: &str| {
        client.call(
            &ToolCall::new("nested", json!({"depth": depth, "place": place})).caps(all_caps()),
        )
    };
    for (place, named) in [
        ("structured", "structured content"),
        ("embedded_meta", "_meta"),
        ("form", "requestedSchema"),
        ("sampling", "_meta"),
    ] {
        // At the limit: sent as given.
        let response = nested(64, place);
        assert!(response.get("result").is_some(), "{place}: {response}");
        assert!(
            !is_error(&response["result"]),
            "{place} at the limit: {response}"
        );
        assert!(depth_of(&response) > 64, "{place}: {response}");
        // One level over: the call fails, naming the value and the limit.
        let said = assert_limit(&nested(65, place), &["nested", "invalid outcome"]);
        assert!(
            said.contains(&format!(
                "{named} nests arrays and objects deeper than 64 levels (--max-json-depth)"
            )),
            "{place}: {said}"
        );
    }
    // A read's `_meta`: an internal error naming the resource.
    let read = |uri: &str| client.rpc("resources/read", json!({"uri": uri}), no_caps());
    let fine = read("nested://64");
    assert_eq!(depth_of(&complete(&fine)["contents"][0]["_meta"]), 64);
    let too_deep = read("nested://100000");
    assert_eq!(error_code(&too_deep), -32603, "{too_deep}");
    let message = error_message(&too_deep);
    assert!(
        message.contains("nested://100000")
            && message.contains("_meta nests arrays and objects deeper than 64 levels"),
        "{message}"
    );
    airlock_e2e::flows::sha256(&client);
}

#[test]
fn at_the_highest_limit_the_deepest_reply_still_parses() {
    // A value 100 deep (the highest --max-json-depth), in the deepest place
    // a reply carries one: the `_meta` of a resource embedded in a tool
    // result of a sampling request. The client parses replies with
    // serde_json, which stops at 127 levels.
    let (_tools, server) = serve_bombs(1, &["--max-json-depth", "100"]);
    let client = server.client();
    let response = client.call(
        &ToolCall::new("nested", json!({"depth": 100, "place": "sampling"})).caps(all_caps()),
    );
    let request = input_request(&response["result"], "model");
    let meta = &request["params"]["messages"][0]["content"][1]["content"][0]["resource"]["_meta"];
    assert_eq!(depth_of(meta), 100, "{request}");
    assert!(depth_of(&response) < 128, "{}", depth_of(&response));
    // Past the highest limit, the option itself is refused.
    let (status, _, stderr) =
        airlock_e2e::run_airlock(&["serve", "--max-json-depth", "101", "--check"]);
    assert!(!status.success());
    assert!(stderr.contains("--max-json-depth"), "{stderr}");
}
