//! Listing a component again after it reported that a list changed
//! (`notify::list_changed`): the component keeps the limits that span its
//! calls, and a storm of reports neither delays a reload of the tools
//! directory nor makes the server list the component once per report.
//!
//! The `watcher` guest reports on demand: `hold {ms, relist}` reports its
//! tool list as changed, then holds and answers when it ran; `relist
//! {times}` reports it `times` times.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use airlock_e2e::mcp::{complete, text};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolCall, ToolsDir, listen};
use serde_json::{Value, json};

/// When one `hold` call ran, in wall-clock milliseconds (as the guest saw it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Ran {
    start: u64,
    end: u64,
}

/// Calls `hold {ms, relist}` and returns when it ran.
#[track_caller]
fn hold(client: &dyn McpClient, ms: u64, relist: bool) -> Ran {
    let response = client.call(&ToolCall::new(
        "hold",
        json!({ "ms": ms, "relist": relist }),
    ));
    let answer: Value = serde_json::from_str(&text(complete(&response)))
        .unwrap_or_else(|e| panic!("`hold` answers JSON ({e}): {response}"));
    let millis = |key: &str| {
        answer[key]
            .as_u64()
            .unwrap_or_else(|| panic!("`hold` answers `{key}` in milliseconds: {answer}"))
    };
    Ran {
        start: millis("start"),
        end: millis("end"),
    }
}

/// `hold` from a thread of its own, on a connection of its own.
fn hold_in_thread(server: &HttpServer, ms: u64, relist: bool) -> thread::JoinHandle<Ran> {
    let url = server.url().to_string();
    thread::spawn(move || hold(&Http::new(&url), ms, relist))
}

#[test]
fn max_concurrent_still_counts_calls_that_started_before_a_relist() {
    let tools = ToolsDir::with(&["watcher"]);
    tools.add_bytes("watcher.toml", b"[limits]\nmax-concurrent = 1\n");
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    let (_id, mut changes) = listen(&client, json!({"toolsListChanged": true}));

    // The first call takes the only slot and reports a change, so the
    // component is listed again while the call still runs...
    let first = hold_in_thread(&server, 3000, true);
    changes.expect_event("tools/list_changed once the watcher is listed again");

    // ...and the calls made after the relist wait for that slot, and for
    // each other.
    let later: Vec<_> = (0..2)
        .map(|_| hold_in_thread(&server, 300, false))
        .collect();
    let mut ran = vec![first.join().expect("the first call")];
    ran.extend(
        later
            .into_iter()
            .map(|call| call.join().expect("a later call")),
    );
    ran.sort();
    for pair in ran.windows(2) {
        assert!(
            pair[0].end <= pair[1].start,
            "with max-concurrent = 1 two calls ran at once across a relist: {:?} and {:?} (all: {ran:?})",
            pair[0],
            pair[1]
        );
    }
}

/// How many times each `relist` call of the storm reports a change.
const REPORTS_PER_CALL: u64 = 200;
/// The storm goes on at least this many calls, and until the test ends it.
const STORM_CALLS: usize = 5;
/// A liveness bound: a new component is served well within it (the
/// directory is polled every 100 ms), storm or not.
const NEW_COMPONENT_WITHIN: Duration = Duration::from_secs(10);
/// More tool list changes than this announced for the storm means its
/// reports were not merged (at least REPORTS_PER_CALL * STORM_CALLS of
/// them; merged, one relist a second answers them all).
const MOST_ANNOUNCED: usize = 20;
/// What the server logs each time it lists a component again.
const RELISTED: &str = "listed the component again";

#[test]
fn a_storm_of_list_changes_neither_holds_up_a_reload_nor_relists_once_per_report() {
    let tools = ToolsDir::with(&["watcher"]);
    let server = Airlock::new(&tools)
        .args(["--reload-interval", "100ms"])
        .env("AIRLOCK_LOG", "airlock=info,airlock::live=debug")
        .start_http();
    let client = server.client();
    assert_eq!(client.tool_names(), ["hold", "relist", "touch"]);
    let (_id, mut changes) = listen(
        &client,
        json!({"toolsListChanged": true, "resourceSubscriptions": ["watch://alpha"]}),
    );

    // The storm: `relist` calls one after another, on their own connection,
    // at least STORM_CALLS of them and until the test has seen the reload.
    let calls = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let storm = {
        let (url, calls, stop) = (server.url().to_string(), calls.clone(), stop.clone());
        thread::spawn(move || {
            let storm = Http::new(&url);
            let call = ToolCall::new("relist", json!({ "times": REPORTS_PER_CALL }));
            while calls.load(Ordering::SeqCst) < STORM_CALLS || !stop.load(Ordering::SeqCst) {
                let response = storm.call(&call);
                assert_eq!(
                    text(complete(&response)),
                    format!("reported {REPORTS_PER_CALL}")
                );
                calls.fetch_add(1, Ordering::SeqCst);
            }
        })
    };
    while calls.load(Ordering::SeqCst) == 0 {
        thread::sleep(Duration::from_millis(10));
    }

    // A new component, published while the storm goes on, is served.
    tools.publish_as("hash", "hash.wasm");
    let published = Instant::now();
    let served = loop {
        let names = client.tool_names();
        if names.iter().any(|name| name == "sha256") {
            break Ok(names);
        }
        if published.elapsed() > NEW_COMPONENT_WITHIN {
            break Err(names);
        }
        thread::sleep(Duration::from_millis(20));
    };
    stop.store(true, Ordering::SeqCst);
    storm.join().expect("every call of the storm completes");
    let served = served.unwrap_or_else(|names| {
        panic!(
            "hash.wasm was not served within {NEW_COMPONENT_WITHIN:?} of being published during \
             a storm of list changes; tools: {names:?}"
        )
    });
    assert_eq!(served, ["hold", "relist", "sha256", "touch"]);

    // The storm's reports were merged: the listener was told of a handful
    // of tool list changes (the relists and the reload), not one per
    // report. A resource update reported after the storm marks its end.
    let marker = client.call(&ToolCall::new("touch", json!({"uri": "watch://alpha"})));
    assert_eq!(text(complete(&marker)), "touched watch://alpha");
    let mut announced = 0;
    loop {
        let note =
            changes.expect_event("the storm's tool list changes, then watch://alpha updated");
        match note["method"].as_str() {
            Some("notifications/tools/list_changed") => announced += 1,
            Some("notifications/resources/updated") => break,
            _ => panic!("unexpected notification: {note}"),
        }
        assert!(
            announced <= MOST_ANNOUNCED,
            "over {MOST_ANNOUNCED} tool list changes announced for a storm of {} calls: its \
             reports were not merged",
            calls.load(Ordering::SeqCst)
        );
    }
    let log = server.stderr();
    let relists = log
        .lines()
        .filter(|line| line.contains(RELISTED) && line.contains("watcher.wasm"))
        .count();
    assert!(
        (1..=announced).contains(&relists),
        "the storm was answered by {relists} relists, {announced} tool list changes announced; \
         log:\n{log}"
    );
}
