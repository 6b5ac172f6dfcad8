//! Guests run in a fresh, bounded sandbox: no memory between calls or
//! rounds, a deadline, a memory cap, an output cap, no environment and no
//! files; a failing guest fails only its own call.

use std::thread;
use std::time::{Duration, Instant};

use airlock_e2e::flows::drive;
use airlock_e2e::mcp::{ToolCall, complete, input_request_keys, is_error, text};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolsDir};
use serde_json::{Value, json};

/// Generous bound for "the call was answered" (liveness, not speed).
const ANSWERED_WITHIN: Duration = Duration::from_secs(30);

fn probe(args: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(&["probe", "hash"]))
        .args(args)
        .start_http()
}

fn call(client: &dyn McpClient, name: &str, args: Value) -> Value {
    client.call(&ToolCall::new(name, args))
}

/// The complete result of `name`; asserts it is an error whose text
/// contains `why` (case-insensitive).
#[track_caller]
fn assert_guest_failure(response: &Value, why: &str) {
    let r = complete(response);
    assert!(is_error(r), "expected isError: {response}");
    let t = text(r).to_ascii_lowercase();
    assert!(
        t.contains(why),
        "the error text should say {why:?}: {response}"
    );
}

#[track_caller]
fn assert_sha256_works(client: &Http) {
    let response = call(client, "sha256", json!({"text": "abc"}));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(
        text(r).trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn globals_never_survive_a_call() {
    let server = probe(&[]);
    let client = server.client();
    for _ in 0..5 {
        let response = call(&client, "count", json!({}));
        assert_eq!(text(complete(&response)).trim(), "1", "{response}");
    }
    // Nor between concurrent calls.
    thread::scope(|s| {
        let handles: Vec<_> = (0..6)
            .map(|_| s.spawn(|| call(&client, "count", json!({}))))
            .collect();
        for h in handles {
            let response = h.join().unwrap();
            assert_eq!(text(complete(&response)).trim(), "1", "{response}");
        }
    });
}

#[test]
fn every_round_runs_in_a_fresh_instance() {
    let server = probe(&[]);
    let client = server.client();
    let driven = drive(
        &client,
        &ToolCall::new("count_rounds", json!({"rounds": 3})),
        |r| {
            assert!(input_request_keys(r).is_empty(), "state-only rounds: {r}");
            Value::Null
        },
    );
    assert_eq!(driven.states.len(), 2, "{driven:?}");
    assert_eq!(
        text(driven.complete()).trim(),
        "1,1,1",
        "{:?}",
        driven.last()
    );
}

#[test]
fn a_spinning_guest_is_stopped_while_others_keep_serving() {
    let server = probe(&["--call-timeout", "1s"]);
    let url = server.url().to_string();
    let started = Instant::now();
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || {
                let client = Http::new(&url);
                let response = call(&client, "spin", json!({}));
                (response, Instant::now())
            })
        })
        .collect();
    // While both spin (2 cores), other calls are served.
    let client = server.client();
    for _ in 0..10 {
        assert_sha256_works(&client);
        let response = call(&client, "count", json!({}));
        assert_eq!(text(complete(&response)).trim(), "1", "{response}");
    }
    for spinner in spinners {
        let (response, at) = spinner.join().unwrap();
        assert!(
            at.duration_since(started) < ANSWERED_WITHIN,
            "spin was not stopped within {ANSWERED_WITHIN:?}"
        );
        assert_guest_failure(&response, "time limit");
    }
    assert_sha256_works(&client);
}

#[test]
fn a_memory_hog_is_stopped_by_the_cap() {
    let mut server = probe(&["--max-memory", "32MiB"]);
    let client = server.client();
    let response = call(&client, "hog", json!({}));
    assert_guest_failure(&response, "memory limit");
    assert!(server.is_running(), "the server must survive a hog");
    assert_sha256_works(&client);
    let response = call(&client, "count", json!({}));
    assert_eq!(text(complete(&response)).trim(), "1", "{response}");
}

#[test]
fn a_crash_fails_only_that_call() {
    let mut server = probe(&[]);
    let client = server.client();
    for _ in 0..3 {
        let response = call(&client, "trap", json!({}));
        assert_guest_failure(&response, "crashed");
        assert_sha256_works(&client);
    }
    assert!(server.is_running());
}

#[test]
fn output_over_the_cap_is_an_error_result() {
    let server = probe(&["--max-output", "16KiB"]);
    let client = server.client();
    let response = call(&client, "big_output", json!({"bytes": 64 * 1024}));
    assert_guest_failure(&response, "output");
    // Below the cap is fine.
    let response = call(&client, "big_output", json!({"bytes": 1024}));
    let r = complete(&response);
    assert!(!is_error(r), "1 KiB is under a 16 KiB cap: {response}");
    assert_sha256_works(&client);
}

#[test]
fn invalid_json_from_a_guest_is_an_error_result() {
    let server = probe(&[]);
    let client = server.client();
    let response = call(&client, "bad_json", json!({}));
    let r = complete(&response);
    assert!(is_error(r), "{response}");
    let why = text(r).to_ascii_lowercase();
    assert!(
        why.contains("json") && why.contains("bad_json"),
        "say which tool returned invalid JSON: {response}"
    );
    assert_sha256_works(&client);
}

#[test]
fn guests_see_no_environment() {
    let server = Airlock::new(&ToolsDir::with(&["probe"]))
        .env("AIRLOCK_E2E_SECRET", "hunter2")
        .start_http();
    let response = call(&server.client(), "env", json!({}));
    let r = complete(&response);
    let t = text(r);
    assert!(!t.contains("hunter2"), "the host environment leaked: {t}");
    assert!(!t.contains("PATH"), "the host environment leaked: {t}");
    let seen: Value = serde_json::from_str(t.trim())
        .unwrap_or_else(|e| panic!("env should report JSON ({e}): {t}"));
    assert_eq!(
        seen["vars"],
        json!({}),
        "a guest must see no environment variables: {seen}"
    );
    assert_eq!(r["structuredContent"]["vars"], json!({}), "{response}");
}

#[test]
fn guests_cannot_read_files() {
    let tools = ToolsDir::with(&["probe"]);
    let secret = tools.path().join("secret.txt");
    std::fs::write(&secret, "top-secret-e2e").unwrap();
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    for path in [
        secret.to_string_lossy().into_owned(),
        "/etc/passwd".to_string(),
        "secret.txt".to_string(),
        ".".to_string(),
    ] {
        let response = call(&client, "read_file", json!({ "path": path }));
        let r = complete(&response);
        let t = text(r);
        assert!(is_error(r), "reading {path} must fail: {response}");
        assert!(!t.contains("top-secret-e2e"), "file content leaked: {t}");
        assert!(!t.contains("root:"), "file content leaked: {t}");
    }
}

#[test]
fn a_slow_call_within_its_deadline_completes() {
    let server = probe(&["--call-timeout", "5s"]);
    let response = call(&server.client(), "sleep", json!({"ms": 300}));
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
}

#[test]
fn calls_over_the_concurrency_cap_wait_their_turn() {
    let server = probe(&["--max-concurrent-calls", "1"]);
    let url = server.url().to_string();
    let started = Instant::now();
    let sleepers: Vec<_> = (0..3)
        .map(|_| {
            let url = url.clone();
            thread::spawn(move || call(&Http::new(&url), "sleep", json!({"ms": 700})))
        })
        .collect();
    for sleeper in sleepers {
        let response = sleeper.join().unwrap();
        let r = complete(&response);
        assert!(!is_error(r), "a queued call must not fail: {response}");
        assert_eq!(text(r), "slept 700");
    }
    // One at a time: three 700 ms sleeps cannot finish sooner than 2.1 s.
    assert!(
        started.elapsed() >= Duration::from_millis(2000),
        "with --max-concurrent-calls 1 the sleeps ran side by side ({:?})",
        started.elapsed()
    );
    assert_sha256_works(&server.client());
}

#[test]
fn calls_beyond_the_queue_are_refused_at_once() {
    // One slot and one place in the queue: of three slow calls made
    // together, one runs, one waits for it, and one is refused at once.
    let server = probe(&[
        "--max-concurrent-calls",
        "1",
        "--max-queued-calls",
        "1",
        "--call-timeout",
        "60s",
    ]);
    let url = server.url().to_string();
    let (answered, answers) = std::sync::mpsc::channel();
    for _ in 0..3 {
        let (url, answered) = (url.clone(), answered.clone());
        thread::spawn(move || {
            let sleep = ToolCall::new("sleep", json!({"ms": 5000}));
            let (_, reply) = Http::new(&url).send("tools/call", sleep.params());
            let _ = answered.send(reply);
        });
    }
    let mut replies = (0..3).map(|_| {
        answers
            .recv_timeout(2 * ANSWERED_WITHIN)
            .expect("every call is answered")
    });
    let first = replies.next().unwrap();
    assert_eq!(
        first.status,
        503,
        "the third call must not wait: {}",
        first.text()
    );
    let message = first.json()["error"]["message"].to_string();
    assert!(message.contains("busy"), "{message}");
    for reply in replies {
        assert_eq!(reply.status, 200, "{}", reply.text());
        assert_eq!(text(complete(&reply.json())), "slept 5000");
    }
}

#[test]
fn a_client_that_goes_away_cancels_its_call() {
    // One slot, long deadlines: if the abandoned sleep kept running, the next
    // call would wait for its slot far longer than the bound below.
    let server = probe(&["--max-concurrent-calls", "1", "--call-timeout", "60s"]);
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "sleep", "arguments": {"ms": 50_000}, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}},
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: sleep\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len(),
        addr = server.addr(),
    );
    let mut socket = std::net::TcpStream::connect(server.addr()).unwrap();
    std::io::Write::write_all(&mut socket, request.as_bytes()).unwrap();
    thread::sleep(Duration::from_millis(500));
    drop(socket);
    let started = Instant::now();
    let response = call(&server.client(), "count", json!({}));
    assert_eq!(text(complete(&response)), "1");
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the abandoned call still held the only slot ({:?})",
        started.elapsed()
    );
}
