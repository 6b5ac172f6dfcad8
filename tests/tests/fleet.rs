//! Airlock as a fleet on plain hosts: three `airlock serve` processes sharing
//! a key ring and a Redis (tasks, and single-use state where a test asks for
//! it), behind nginx serving the example `deploy/nginx/airlock.conf`, all on
//! loopback. The rounds of one call cross hosts; a host killed mid-run loses
//! no call (a client re-sends a failed round once); a rolling restart under
//! load fails no request; a single-use requestState is refused on every host
//! after its first use; and a real Prometheus, scraping the three hosts,
//! gives back the number of calls the test made.
//!
//! Each test starts a fleet of its own, one at a time: a fleet and the load
//! on it use what the machine has.

use std::collections::BTreeSet;
use std::io::Write;
use std::net::TcpStream;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use airlock_e2e::daemon::free_port;
use airlock_e2e::http::read_raw_reply;
use airlock_e2e::legacy::{Endpoint, legacy_caps};
use airlock_e2e::mcp::{ToolCall, assert_state_rejected, elicit, request_state, text};
use airlock_e2e::{
    Airlock, Http, HttpServer, McpClient, Nginx, Prometheus, RedisServer, ToolsDir, raw_http,
    run_airlock, wait_until,
};
use serde_json::{Value, json};

/// Hosts in the fleet.
const HOSTS: usize = 3;

/// How long a stopping host may take to exit: a liveness bound.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The counter of `tools/call` operations in a host's metrics (one sample
/// per label set; they are added up).
const TOOLS_CALL_COUNT: &str =
    "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\"";

/// Concurrent clients of the load tests.
const CLIENTS: usize = 4;

/// Calls each client completes after a disruption, before the load stops.
const CALLS_AFTER: usize = 3;

/// One fleet at a time.
static ONE_FLEET_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Where the hosts record used requestState ids.
#[derive(Clone, Copy, PartialEq)]
enum SingleUse {
    /// Nowhere: a requestState may be sent again (the default), which is
    /// what lets a client re-send a round whose answer it lost.
    Off,
    /// In the shared Redis: a requestState opens once across the fleet.
    Redis,
}

/// One Airlock host: how to start it, where it listens, and the process.
struct Host {
    command: Airlock,
    address: String,
    metrics: String,
    server: HttpServer,
}

impl Host {
    fn start(command: Airlock) -> HttpServer {
        let server = command.start_http();
        wait_until("the host to be ready", || {
            let reply = raw_http(
                &server.addr(),
                b"GET /readyz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n",
            );
            (reply.status == 200)
                .then_some(())
                .ok_or_else(|| format!("{} {}", reply.status, reply.text()))
        });
        server
    }

    /// `tools/call` operations this host has answered, from its metrics.
    fn calls_answered(&self) -> u64 {
        let reply = Http::new(&format!("http://{}/metrics", self.metrics)).get();
        assert_eq!(reply.status, 200, "{}", reply.text());
        reply
            .text()
            .lines()
            .filter(|line| line.starts_with(TOOLS_CALL_COUNT))
            .map(|line| {
                let value = line.rsplit(' ').next().unwrap_or_default();
                value
                    .parse::<f64>()
                    .unwrap_or_else(|_| panic!("a count: {line}")) as u64
            })
            .sum()
    }
}

/// Three hosts behind nginx, with their Redis.
struct Fleet {
    hosts: Vec<Host>,
    nginx: Nginx,
    _redis: RedisServer,
    _dir: tempfile::TempDir,
    _one_at_a_time: MutexGuard<'static, ()>,
}

impl Fleet {
    fn start(single_use: SingleUse) -> Fleet {
        let one_at_a_time = ONE_FLEET_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let redis = RedisServer::start();
        let dir = tempfile::tempdir().unwrap();
        let (status, key, stderr) = run_airlock(&["keygen"]);
        assert!(status.success(), "airlock keygen failed: {stderr}");
        let keys = dir.path().join("state.keys");
        std::fs::write(&keys, key).unwrap();
        let tools = ToolsDir::with(&["work_items", "deploy", "hash"]);

        let mut hosts = Vec::new();
        for _ in 0..HOSTS {
            let address = format!("127.0.0.1:{}", free_port());
            let metrics = format!("127.0.0.1:{}", free_port());
            let mut command = Airlock::new(&tools)
                .listen(&address)
                .with_cache()
                .arg("--cache-dir")
                .arg(dir.path().join("cache"))
                .arg("--state-keys-file")
                .arg(&keys)
                .args(["--task-store", &redis.url()])
                .args(["--metrics-listen", &metrics])
                .args(["--shutdown-drain-delay", "2s"]);
            if single_use == SingleUse::Redis {
                command = command.args(["--single-use-store", &redis.url()]);
            }
            // One after the other: the first compiles the components into
            // the shared cache, the others load them from it.
            let server = Host::start(command.clone());
            hosts.push(Host {
                command,
                address,
                metrics,
                server,
            });
        }
        let addresses: Vec<String> = hosts.iter().map(|host| host.address.clone()).collect();
        let nginx = Nginx::example(&addresses);
        Fleet {
            hosts,
            nginx,
            _redis: redis,
            _dir: dir,
            _one_at_a_time: one_at_a_time,
        }
    }

    /// A client of the fleet, through nginx.
    fn client(&self) -> Http {
        Http::new(&self.nginx.url())
    }

    /// `tools/call` operations answered by each host so far.
    fn calls_answered(&self) -> Vec<u64> {
        self.hosts.iter().map(Host::calls_answered).collect()
    }

    /// Stops host `index` as a service manager does (SIGTERM), waits until
    /// it has exited 0, starts it again on the same address and waits until
    /// it is ready.
    fn restart(&mut self, index: usize) {
        let host = &mut self.hosts[index];
        host.server.terminate();
        let status = host
            .server
            .wait_exit(EXIT_TIMEOUT)
            .unwrap_or_else(|| panic!("host {index} did not exit within {EXIT_TIMEOUT:?}"));
        assert!(
            status.success(),
            "host {index} exited with {status}:\n{}",
            host.server.stderr()
        );
        host.server = Host::start(host.command.clone());
    }
}

/// What the clients of a load test saw.
#[derive(Default)]
struct Tally {
    /// Calls completed.
    completed: AtomicUsize,
    /// Every round that failed, and why; each was sent again once.
    failed_rounds: Mutex<Vec<String>>,
    /// Every call that could not complete, and why.
    lost_calls: Mutex<Vec<String>>,
}

/// One round through nginx: the JSON-RPC result, or why there is none (an
/// HTTP error from nginx, a connection cut mid-answer, a JSON-RPC error).
fn send_round(client: &Http, call: &ToolCall) -> Result<Value, String> {
    let reply = catch_unwind(AssertUnwindSafe(|| {
        client.send("tools/call", call.params()).1
    }))
    .map_err(|_| "the exchange broke off".to_owned())?;
    if reply.status != 200 {
        return Err(format!("HTTP {}: {}", reply.status, reply.text()));
    }
    let response = catch_unwind(AssertUnwindSafe(|| reply.message()))
        .map_err(|_| format!("not a JSON-RPC answer: {}", reply.text()))?;
    response
        .get("result")
        .cloned()
        .ok_or_else(|| format!("an error: {response}"))
}

/// `update_work_item` resolving work item `item` as a duplicate: three
/// rounds (two questions, then done). A round that fails is sent again,
/// once, and noted in `failed_rounds`; `after_round` runs after each round
/// answered. `Err` says why the call could not complete.
fn work_item_call(
    client: &Http,
    item: u64,
    failed_rounds: &Mutex<Vec<String>>,
    mut after_round: impl FnMut(),
) -> Result<(), String> {
    let duplicate_of = item + 100_000;
    let call = ToolCall::new(
        "update_work_item",
        json!({"workItemId": item, "fields": {"State": "Resolved"}}),
    );
    let mut round = call.clone();
    for number in 1..=3 {
        let result = send_round(client, &round).or_else(|why| {
            failed_rounds
                .lock()
                .unwrap()
                .push(format!("work item {item}, round {number}: {why}"));
            send_round(client, &round)
                .map_err(|again| format!("round {number} failed twice: {why}; then {again}"))
        })?;
        after_round();
        let answers = match (result["resultType"].as_str(), number) {
            (Some("input_required"), 1) => {
                json!({"resolution": elicit("accept", Some(json!({"resolution": "Duplicate"})))})
            }
            (Some("input_required"), 2) => {
                json!({"duplicate_of": elicit("accept", Some(json!({"duplicateOf": duplicate_of})))})
            }
            (Some("complete"), 3) => {
                let expected = format!(
                    "Updated work item {item}: State = Resolved, Resolution = Duplicate, \
                     Duplicate Of = {duplicate_of}"
                );
                return if text(&result) == expected {
                    Ok(())
                } else {
                    Err(format!("wrong result: {result}"))
                };
            }
            _ => return Err(format!("unexpected result in round {number}: {result}")),
        };
        round = call.retry(&result, answers);
    }
    unreachable!("the third round returns")
}

/// Runs `update_work_item` calls through nginx at `url` from [`CLIENTS`] threads
/// until `stop`; then returns.
fn load(url: &str, tally: &Tally, stop: &AtomicBool) {
    std::thread::scope(|scope| {
        for client_number in 0..CLIENTS {
            let client = Http::new(url);
            scope.spawn(move || {
                let mut item = client_number as u64 * 1_000_000;
                while !stop.load(Ordering::Relaxed) {
                    item += 1;
                    match work_item_call(&client, item, &tally.failed_rounds, || {}) {
                        Ok(()) => {
                            tally.completed.fetch_add(1, Ordering::Relaxed);
                        }
                        Err(why) => tally
                            .lost_calls
                            .lock()
                            .unwrap()
                            .push(format!("work item {item}: {why}")),
                    }
                }
            });
        }
    });
}

/// Waits until the clients have completed `more` calls beyond `from`.
fn wait_for_calls(tally: &Tally, from: usize, more: usize) {
    wait_until(&format!("{more} more calls to complete"), || {
        let completed = tally.completed.load(Ordering::Relaxed);
        if completed >= from + more {
            Ok(completed)
        } else {
            Err(format!("{completed} completed"))
        }
    });
}

/// Runs the clients against `url` until `during` returns (or panics),
/// starting it once every client has completed two calls; the tally of the
/// whole run.
fn under_load(url: &str, during: impl FnOnce(&Tally)) -> Tally {
    /// Stops the clients when dropped, also while a failed check unwinds.
    struct StopClients<'a>(&'a AtomicBool);
    impl Drop for StopClients<'_> {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let tally = Tally::default();
    let stop = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| load(url, &tally, &stop));
        let _stop = StopClients(&stop);
        wait_for_calls(&tally, 0, 2 * CLIENTS);
        during(&tally);
    });
    tally
}

/// The host whose count went up by one between `before` and `after`.
#[track_caller]
fn the_host_that_answered(before: &[u64], after: &[u64]) -> usize {
    let grown: Vec<usize> = (0..HOSTS).filter(|&i| after[i] != before[i]).collect();
    match grown.as_slice() {
        [host] if after[*host] == before[*host] + 1 => *host,
        _ => panic!("one host should have answered one call: before {before:?}, after {after:?}"),
    }
}

#[test]
fn rounds_cross_hosts_state_opens_once_and_prometheus_counts_every_call() {
    let fleet = Fleet::start(SingleUse::Redis);
    let metrics: Vec<String> = fleet
        .hosts
        .iter()
        .map(|host| host.metrics.clone())
        .collect();
    let prometheus = Prometheus::scraping("airlock", &metrics);
    let client = fleet.client();
    let mut calls_made = 0u64;

    // Multi-round calls through nginx: each host's own counter says which
    // host answered each round.
    let no_failures = Mutex::new(Vec::new());
    let mut hosts_of_all = BTreeSet::new();
    for item in 1..=4 {
        let mut before = fleet.calls_answered();
        let mut hosts = Vec::new();
        work_item_call(&client, item, &no_failures, || {
            let after = fleet.calls_answered();
            hosts.push(the_host_that_answered(&before, &after));
            before = after;
        })
        .unwrap_or_else(|why| panic!("work item {item}: {why}"));
        calls_made += 3;
        let distinct: BTreeSet<usize> = hosts.iter().copied().collect();
        assert!(
            distinct.len() > 1,
            "the rounds of work item {item} were all answered by host {hosts:?}"
        );
        hosts_of_all.extend(distinct);
    }
    assert_eq!(no_failures.into_inner().unwrap(), Vec::<String>::new());
    assert_eq!(hosts_of_all.len(), HOSTS, "every host answers rounds");

    // Single use: a requestState used through nginx is refused by every
    // host, asked directly.
    let confirm = ToolCall::new("confirm", json!({"action": "ship"}));
    let first = send_round(&client, &confirm).expect("the first round of confirm");
    let second = confirm
        .clone()
        .state(request_state(&first))
        .responses(json!({"confirm": elicit("accept", Some(json!({"ok": true})))}));
    let done = send_round(&client, &second).expect("the second round of confirm");
    assert_eq!(text(&done).trim(), "confirmed ship", "{done}");
    calls_made += 2;
    for host in &fleet.hosts {
        let replayed = host.server.client().call(&second);
        assert_state_rejected(&replayed);
        calls_made += 1;
    }

    // A 2025-era session through nginx: every request reaches the host that
    // holds the session (client-address affinity), so none gets 404.
    let session = Endpoint::new(&fleet.nginx.url()).open(legacy_caps());
    for _ in 0..2 * HOSTS {
        let listed = session.result("tools/list", json!({}));
        assert!(listed["tools"].is_array(), "{listed}");
    }
    let hashed = session.result(
        "tools/call",
        json!({"name": "sha256", "arguments": {"text": "abc"}}),
    );
    assert!(text(&hashed).contains("ba7816bf"), "{hashed}");
    calls_made += 1;

    // Prometheus scrapes the three hosts; the sum over them is every call
    // made, and each host's share is what the host itself says.
    wait_until("Prometheus to scrape the three hosts", || {
        let up = prometheus.value("count(up{job=\"airlock\"} == 1)")?;
        (up == HOSTS as f64)
            .then_some(())
            .ok_or_else(|| format!("{up} targets up"))
    });
    let total = format!("sum({TOOLS_CALL_COUNT}}})");
    wait_until("Prometheus to count every call", || {
        let counted = prometheus.value(&total)?;
        assert!(
            counted <= calls_made as f64,
            "Prometheus counts {counted} calls, more than the {calls_made} made"
        );
        (counted == calls_made as f64)
            .then_some(())
            .ok_or_else(|| format!("{counted} of {calls_made}"))
    });
    let answered = fleet.calls_answered();
    assert_eq!(answered.iter().sum::<u64>(), calls_made);
    let by_instance = prometheus
        .query(&format!("sum by (instance) ({TOOLS_CALL_COUNT}}})"))
        .expect("the calls of each host");
    for (host, expected) in fleet.hosts.iter().zip(&answered) {
        let counted = by_instance
            .iter()
            .find(|(labels, _)| labels["instance"] == host.metrics.as_str())
            .map(|(_, value)| *value);
        assert_eq!(
            counted,
            Some(*expected as f64),
            "{}: {by_instance:?}",
            host.metrics
        );
    }
}

/// A requestState may be sent again (single use off, the default): a round
/// whose host died is re-sent once and answered by another host.
#[test]
fn a_host_killed_mid_run_loses_no_call() {
    let mut fleet = Fleet::start(SingleUse::Off);
    let url = fleet.nginx.url();
    let tally = under_load(&url, |tally| {
        assert!(
            fleet.hosts[1].calls_answered() > 0,
            "the host to kill should be serving"
        );
        fleet.hosts[1].server.kill();
        let at_kill = tally.completed.load(Ordering::Relaxed);
        wait_for_calls(tally, at_kill, CALLS_AFTER * CLIENTS);
    });
    let lost = tally.lost_calls.into_inner().unwrap();
    assert!(lost.is_empty(), "calls lost: {lost:#?}");
    let failed = tally.failed_rounds.into_inner().unwrap();
    println!(
        "{} calls completed; rounds sent again: {failed:#?}",
        tally.completed.into_inner()
    );
}

/// Each host in turn gets SIGTERM, drains, exits, and starts again on the
/// same address while clients keep calling through nginx: no request fails.
#[test]
fn a_rolling_restart_under_load_fails_no_request() {
    let mut fleet = Fleet::start(SingleUse::Redis);
    let url = fleet.nginx.url();
    let tally = under_load(&url, |tally| {
        for index in 0..HOSTS {
            fleet.restart(index);
            let restarted = tally.completed.load(Ordering::Relaxed);
            wait_for_calls(tally, restarted, CALLS_AFTER * CLIENTS);
        }
    });
    let failed = tally.failed_rounds.into_inner().unwrap();
    assert!(failed.is_empty(), "requests failed: {failed:#?}");
    let lost = tally.lost_calls.into_inner().unwrap();
    assert!(lost.is_empty(), "calls lost: {lost:#?}");
    println!("{} calls completed", tally.completed.into_inner());
}

/// Sends `signal` (`STOP`, `CONT`) to the host's process.
fn signal(server: &HttpServer, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &server.pid().to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill -{signal} failed: {status}");
}

/// What a proxy in front relies on when a host stops: a connection the
/// host's kernel had already established when it stopped accepting (its
/// request sent) is served, not reset. The host is frozen (SIGSTOP) so the
/// connection waits unaccepted in the backlog while SIGTERM arrives.
#[test]
fn a_connection_waiting_when_a_host_stops_is_served_not_reset() {
    let tools = ToolsDir::with(&["hash"]);
    let mut server = Airlock::new(&tools).start_http();
    let call = ToolCall::new("sha256", json!({"text": "abc"}));
    let client = server.client();
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call.params()})
        .to_string();
    let mut request = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in &client.headers_for("tools/call", &call.params()).0 {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);

    signal(&server, "STOP");
    let mut stream = TcpStream::connect(server.addr()).expect("connect to the frozen host");
    stream
        .write_all(request.as_bytes())
        .expect("send the request");
    server.terminate();
    signal(&server, "CONT");

    let reply = read_raw_reply(stream);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let result = reply.message()["result"].clone();
    assert!(text(&result).contains("ba7816bf"), "{}", reply.text());
    let status = server.wait_exit(EXIT_TIMEOUT).expect("the host exits");
    assert!(status.success(), "{status}");
}
