//! What checking a call's arguments against its tool's input schema costs
//! the other callers: nothing, however costly the check. A client that
//! sends a few megabytes which a tool's schema `pattern` is slow to refuse
//! waits for its own refusal; another client's calls go on meanwhile.

use std::thread;
use std::time::{Duration, Instant};

use airlock_e2e::mcp::{complete, is_error, text};
use airlock_e2e::{Airlock, Http, McpClient, ToolCall, ToolsDir};
use serde_json::json;

/// Bytes of the text the costly call sends, within the default 4 MiB body.
const COSTLY_TEXT_BYTES: usize = 3_000_000;

/// `len` `a`s and `b`s in an order that looks random (xorshift), with no
/// digit: `costly-pattern`'s pattern never matches it, and its automaton
/// keeps many states alive all along it.
fn as_and_bs(len: usize) -> String {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if state & 1 == 0 { 'a' } else { 'b' }
        })
        .collect()
}

/// The `q`-quantile of `sorted`.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let last = sorted.len().saturating_sub(1);
    sorted
        .get(((last as f64) * q).round() as usize)
        .copied()
        .unwrap_or_default()
}

#[test]
fn a_costly_refusal_does_not_hold_up_another_callers_calls() {
    let tools = ToolsDir::with(&["costly-pattern"]);
    // One thread serving requests: a check that held it would stop every
    // other call until it ended.
    let server = Airlock::new(&tools)
        .args(["--worker-threads", "1"])
        .start_http();
    let other = server.client();
    assert_eq!(
        text(complete(&other.call(&ToolCall::new("plain", json!({}))))),
        "ok"
    );

    let costly = ToolCall::new("tagged", json!({"text": as_and_bs(COSTLY_TEXT_BYTES)}));
    let url = server.url().to_owned();
    let refusal = thread::spawn(move || {
        let sent = Instant::now();
        let response = Http::new(&url).call(&costly);
        (sent, Instant::now(), response)
    });
    // The other caller's calls, one after another, while the refusal is
    // in flight: when each started and ended.
    let mut calls = Vec::new();
    while !refusal.is_finished() {
        let started = Instant::now();
        let response = other.call(&ToolCall::new("plain", json!({})));
        assert_eq!(text(complete(&response)), "ok", "{response}");
        calls.push((started, Instant::now()));
    }
    let (sent, answered, response) = refusal.join().unwrap();

    let result = complete(&response);
    assert!(is_error(result), "{response}");
    let said = text(result);
    assert!(
        said.starts_with(
            "Tool 'tagged' was not run: its arguments do not match its input schema: /text: "
        ) && said.contains(r#"does not match "a[ab]{24}\d""#)
            && said.len() < 1024,
        "{said}"
    );

    let in_flight = answered - sent;
    // Every call in flight at some time the refusal was.
    let mut latencies: Vec<Duration> = calls
        .iter()
        .filter(|(started, ended)| *started < answered && *ended > sent)
        .map(|(started, ended)| *ended - *started)
        .collect();
    latencies.sort();
    println!(
        "refusal took {in_flight:?}; meanwhile the other caller had {} calls in flight: \
         p50 {:?}, p99 {:?}, slowest {:?}",
        latencies.len(),
        quantile(&latencies, 0.5),
        quantile(&latencies, 0.99),
        latencies.last().copied().unwrap_or_default(),
    );
    // The middle half of the time the refusal was in flight: the body is
    // read and parsed before it, the answer written after it, so all of
    // it is the check. Held by the check, the only thread serving requests
    // would complete no other call there.
    let (from, to) = (sent + in_flight / 4, answered - in_flight / 4);
    let during_the_check = calls
        .iter()
        .filter(|(started, ended)| *started >= from && *ended <= to)
        .count();
    assert!(
        during_the_check > 0,
        "no other call completed while the arguments were checked ({in_flight:?}, {} calls \
         in all)",
        calls.len()
    );
}
