//! The server's log belongs to the server: what a guest (or a client) says
//! can neither start a line of its own in it nor flood it, and one call's
//! log messages are bounded in bytes, on the log and towards the client.

use airlock_e2e::mcp::{ToolCall, complete, is_error, text};
use airlock_e2e::{Airlock, HttpServer, McpClient, ToolsDir, wait_until};
use serde_json::{Value, json};

/// The start of a line a guest would like the server's log to show.
const FORGED: &str = "2026-01-01T00:00:00.000000Z  INFO airlock: forged by the guest";

fn probe(args: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(&["probe"]))
        .args(args)
        .start_http()
}

/// Has the probe log `text` `times` times; asserts the call succeeded.
#[track_caller]
fn log(server: &HttpServer, text_to_log: &str, times: u32) {
    let call = ToolCall::new("log", json!({ "text": text_to_log, "times": times }));
    let response = server.client().call(&call);
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r), format!("logged {times}"));
}

/// Waits until the server's stderr contains `marker`, and returns the
/// stderr up to it. Everything logged before the marker is then in.
#[track_caller]
fn stderr_up_to(server: &HttpServer, marker: &str) -> String {
    wait_until(&format!("{marker:?} in the server's log"), || {
        let stderr = server.stderr();
        match stderr.find(marker) {
            Some(at) => Ok(stderr[..at].to_owned()),
            None => Err(format!("{} bytes of stderr", stderr.len())),
        }
    })
}

#[test]
fn a_guest_cannot_start_a_line_in_the_server_log() {
    let server = probe(&[]);
    let message = format!("before\n{FORGED}\rafter");
    log(&server, &message, 1);
    log(&server, "end-of-test", 1);
    let stderr = stderr_up_to(&server, "end-of-test");
    for line in stderr.lines() {
        assert!(
            !line.starts_with(FORGED) && !line.contains("\rafter"),
            "the guest started a line of its own:\n{stderr}"
        );
    }
    assert!(!stderr.contains('\r'), "a raw carriage return: {stderr:?}");
    let escaped = format!("before\\n{FORGED}\\rafter");
    assert!(
        stderr
            .lines()
            .any(|line| line.contains("airlock::guest") && line.contains(&escaped)),
        "the guest's own line should show its message escaped ({escaped:?}):\n{stderr}"
    );
}

#[test]
fn a_crash_is_logged_with_what_the_guest_printed() {
    let server = probe(&[]);
    let response = server.client().call(&ToolCall::new("trap", json!({})));
    assert!(is_error(complete(&response)), "{response}");
    // The probe panics with this message; Rust prints it to stderr, which
    // the server keeps for the one line it logs about the failed call.
    let line = wait_until("the failed call in the server's log", || {
        let stderr = server.stderr();
        stderr
            .lines()
            .find(|line| line.contains("call failed") && line.contains("tool=\"trap\""))
            .map(str::to_owned)
            .ok_or_else(|| format!("{} bytes of stderr", stderr.len()))
    });
    assert!(
        line.contains("probe: trap was called"),
        "the guest's panic message is missing: {line}"
    );
}

#[test]
fn one_call_logs_at_most_its_output_limit() {
    const OUTPUT_LIMIT: usize = 64 << 10;
    /// Room for the timestamp, level, target and fields of each line, and
    /// the server's own lines: far less than what the flood would add.
    const OVERHEAD: usize = 64 << 10;
    let server = probe(&["--max-output", "64KiB"]);
    let before = server.stderr().len();
    // 2000 messages of 8000 bytes: 16 MB asked for, 250 times the limit.
    let chunk = "x".repeat(8000);
    let call = ToolCall::new("log", json!({ "text": chunk, "times": 2000 })).log_level("info");
    let (_, reply) = server.client().send("tools/call", call.params());
    assert_eq!(reply.status, 200, "{}", reply.text().len());
    let response = reply.message();
    let r = complete(&response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r), "logged 2000");

    let logs: Vec<Value> = reply
        .notifications()
        .into_iter()
        .filter(|n| n["method"] == "notifications/message")
        .collect();
    let sent: usize = logs
        .iter()
        .map(|n| n["params"]["data"].as_str().map_or(0, str::len))
        .sum();
    assert!(
        !logs.is_empty(),
        "messages within the limit still reach the client"
    );
    assert!(
        sent <= OUTPUT_LIMIT,
        "the client got {} log messages, {sent} bytes, over the {OUTPUT_LIMIT}-byte limit",
        logs.len()
    );

    log(&server, "end-of-flood", 1);
    let grown = stderr_up_to(&server, "end-of-flood").len() - before;
    assert!(
        grown <= OUTPUT_LIMIT + OVERHEAD,
        "one call grew the server's log by {grown} bytes, over its {OUTPUT_LIMIT}-byte limit"
    );
}
