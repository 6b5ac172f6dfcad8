//! Quotas against the real binary: each principal's request rate
//! (`--rate-limit`), a tool's rate from its manifest (`[tools.NAME]
//! rate-limit`), and the sessions of 2025-era clients one principal may
//! hold (`--max-sessions-per-principal`). Refusals are JSON-RPC errors
//! -31429 naming the limit, over HTTP with 429 (and `Retry-After` for a
//! rate), over stdio the same error.
//!
//! The rates are slow (one request per seconds or minutes) so that a slow
//! machine cannot refill a bucket between two requests of a test; the one
//! wait is the `retryAfterMs` the server itself advised.

use std::path::PathBuf;
use std::thread::sleep;
use std::time::Duration;

use airlock_e2e::legacy::{
    Endpoint, LEGACY_VERSION, SESSION_HEADER, initialize_params, legacy_caps,
};
use airlock_e2e::mcp::{complete, input_required, is_error, no_caps, text, with_meta};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, Reply, ToolCall, ToolsDir};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Airlock's JSON-RPC code for a used-up quota.
const QUOTA_EXCEEDED: i64 = -31429;

const ALICE: &str = "alice-token-0123456789abcdef";
const BOB: &str = "bob-token-0123456789abcdef";

/// A tokens file naming `alice` and `bob`, kept for the test's length.
struct Tokens {
    dir: TempDir,
}

impl Tokens {
    fn new() -> Tokens {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let text = format!("{ALICE} alice\n{BOB} bob\n");
        std::fs::write(dir.path().join("tokens"), text).expect("write the tokens file");
        Tokens { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("tokens")
    }
}

/// A server on `tools` taking the tokens of `tokens`, with `args`.
fn serve(tools: &ToolsDir, tokens: &Tokens, args: &[&str]) -> HttpServer {
    Airlock::new(tools)
        .arg("--tokens-file")
        .arg(tokens.path())
        .args(args)
        .start_http()
}

/// Calls `sha256`; returns the request's id and the reply.
fn sha256(client: &Http) -> (Value, Reply) {
    let call = ToolCall::new("sha256", json!({"text": "abc"}));
    client.send("tools/call", call.params())
}

/// Asserts a plain success (HTTP 200, a result).
#[track_caller]
fn assert_admitted((_, reply): &(Value, Reply), what: &str) {
    assert_eq!(reply.status, 200, "{what}: {}", reply.text());
    assert!(
        reply.message().get("result").is_some(),
        "{what}: {}",
        reply.text()
    );
}

/// Asserts the answer to request `id` is a refusal for a rate: HTTP 429,
/// `Retry-After` in whole seconds (at least 1, at most `most_secs`), error
/// -31429 naming `limit`; returns the error's data.
#[track_caller]
fn assert_rate_refused((id, reply): &(Value, Reply), limit: &str, most_secs: u64) -> Value {
    let body = reply.assert_error(429, QUOTA_EXCEEDED, Some(id));
    let retry_after: u64 = reply
        .header("retry-after")
        .unwrap_or_else(|| panic!("a 429 for a rate needs Retry-After: {:?}", reply.headers))
        .parse()
        .unwrap_or_else(|_| panic!("Retry-After in whole seconds: {:?}", reply.headers));
    assert!(
        (1..=most_secs).contains(&retry_after),
        "Retry-After {retry_after} is not within 1..={most_secs}"
    );
    let data = &body["error"]["data"];
    assert_eq!(data["limit"], limit, "{body}");
    let millis = data["retryAfterMs"]
        .as_u64()
        .unwrap_or_else(|| panic!("data.retryAfterMs: {body}"));
    assert!(
        millis > 0 && millis.div_ceil(1000) == retry_after,
        "retryAfterMs {millis} and Retry-After {retry_after} disagree: {body}"
    );
    data.clone()
}

#[test]
fn a_principal_over_its_rate_is_refused_until_its_bucket_refills() {
    let tokens = Tokens::new();
    let server = serve(
        &ToolsDir::with(&["hash"]),
        &tokens,
        &[
            "--rate-limit",
            "1/4s",
            "--rate-limit-burst",
            "2",
            "--metrics-listen",
            "127.0.0.1:0",
        ],
    );
    let alice = server.client_with_token(ALICE);
    let bob = server.client_with_token(BOB);

    // Every request counts, whatever its method; notifications do not.
    let listed = alice.send("tools/list", with_meta(json!({}), no_caps()));
    assert_admitted(&listed, "alice's first request");
    for _ in 0..3 {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                          "params": {"requestId": 99}});
        let reply = alice.post_json(&alice.headers_for("notifications/cancelled", &note), &note);
        assert_eq!(reply.status, 202, "{}", reply.text());
    }
    assert_admitted(&sha256(&alice), "alice's second request");

    let refused = sha256(&alice);
    let data = assert_rate_refused(&refused, "rate-limit", 4);
    assert_eq!(
        (data["rate"].as_str(), data["burst"].as_u64()),
        (Some("1/4s"), Some(2))
    );
    let message = refused.1.message()["error"]["message"].clone();
    assert!(
        message.as_str().is_some_and(|m| m
            .starts_with("Too many requests: the limit is 1/4s (burst 2) per caller; retry in ")),
        "{message}"
    );
    let discover = alice.send("server/discover", with_meta(json!({}), no_caps()));
    assert_rate_refused(&discover, "rate-limit", 4);

    // Another principal has its own bucket.
    assert_admitted(&sha256(&bob), "bob, while alice is refused");
    assert_admitted(&sha256(&bob), "bob's burst");

    // After the wait the server advised, alice's next request fits.
    let wait = data["retryAfterMs"].as_u64().expect("retryAfterMs");
    sleep(Duration::from_millis(wait));
    assert_admitted(&sha256(&alice), "alice after the advised wait");
    assert_rate_refused(&sha256(&alice), "rate-limit", 4);

    let metrics = server.scrape_metrics();
    assert!(
        metrics
            .lines()
            .any(|line| line == "airlock_limit_hits_total{kind=\"rate\"} 3"),
        "three refusals counted:\n{metrics}"
    );
}

#[test]
fn a_tool_rate_limit_refuses_that_tool_only() {
    let tokens = Tokens::new();
    let tools = ToolsDir::with(&["deploy", "hash"]);
    tools.add_bytes("deploy.toml", b"[tools.confirm]\nrate-limit = \"1/min\"\n");
    let server = serve(&tools, &tokens, &[]);
    let alice = server.client_with_token(ALICE);
    let bob = server.client_with_token(BOB);
    let confirm = ToolCall::new("confirm", json!({"action": "rotate the keys"}));

    let first = alice.call(&confirm);
    input_required(&first);
    let refused = alice.send("tools/call", confirm.params());
    let data = assert_rate_refused(&refused, "tool-rate-limit", 60);
    assert_eq!(data["tool"], "confirm", "{data}");
    assert_eq!(
        (data["rate"].as_str(), data["burst"].as_u64()),
        (Some("1/min"), Some(1))
    );
    let message = refused.1.message()["error"]["message"].clone();
    assert!(
        message.as_str().is_some_and(|m| m.starts_with(
            "Too many calls of tool confirm: its limit is 1/min (burst 1) per caller; retry in "
        )),
        "{message}"
    );

    // The other tool of the same component, a tool of another component,
    // and another principal's call of the limited tool all go through.
    let staging = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "staging"}),
    );
    let deployed = alice.call(&staging);
    assert_eq!(text(complete(&deployed)), "Deployed billing to staging");
    let hashed = alice.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert!(!is_error(complete(&hashed)), "{hashed}");
    input_required(&bob.call(&confirm));
}

#[test]
fn stdio_gets_the_same_json_rpc_error() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--rate-limit", "1/min"])
        .start_stdio();
    let call = ToolCall::new("sha256", json!({"text": "abc"}));
    let first = server.call(&call);
    assert!(!is_error(complete(&first)), "{first}");
    let refused = server.call(&call);
    let error = &refused["error"];
    assert_eq!(error["code"].as_i64(), Some(QUOTA_EXCEEDED), "{refused}");
    assert_eq!(error["data"]["limit"], "rate-limit", "{refused}");
    let millis = error["data"]["retryAfterMs"].as_u64().unwrap_or(0);
    assert!((1..=60_000).contains(&millis), "{refused}");
}

/// Opens a legacy session at `endpoint`; returns the reply.
fn initialize(endpoint: &Endpoint) -> Reply {
    endpoint.initialize(initialize_params(LEGACY_VERSION, legacy_caps()))
}

#[test]
fn a_principal_may_hold_only_so_many_legacy_sessions() {
    let tokens = Tokens::new();
    let server = serve(
        &ToolsDir::with(&["hash"]),
        &tokens,
        &["--max-sessions-per-principal", "2"],
    );
    let alice = Endpoint::new(server.url()).with_bearer(ALICE);
    let bob = Endpoint::new(server.url()).with_bearer(BOB);
    let first = alice.open(legacy_caps());
    let _second = alice.open(legacy_caps());

    let refused = initialize(&alice);
    let body = refused.assert_error(429, QUOTA_EXCEEDED, Some(&json!(0)));
    assert!(
        refused.header(SESSION_HEADER).is_none(),
        "{:?}",
        refused.headers
    );
    assert_eq!(
        body["error"]["data"]["limit"], "sessions-per-principal",
        "{body}"
    );
    assert_eq!(body["error"]["data"]["max"], 2, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Too many sessions: a caller may have at most 2 open")),
        "{body}"
    );

    // Bob's sessions are his own.
    bob.open(legacy_caps());
    bob.open(legacy_caps());

    // Ending a session frees its slot.
    assert_eq!(first.delete().status, 200);
    let third = initialize(&alice);
    assert_eq!(third.status, 200, "{}", third.text());
    assert!(
        third.header(SESSION_HEADER).is_some(),
        "{:?}",
        third.headers
    );
    assert_eq!(initialize(&alice).status, 429);
}
