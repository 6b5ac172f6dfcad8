//! Prometheus metrics on `--metrics-listen`: the real binary, scraped after
//! a plain call (`sha256` of the `hash` sample), a call to a tool that does
//! not exist, and a call that runs into its deadline (`spin` of the
//! `hostile` guest); the series of tools that are renamed (the `renaming`
//! guest) forgotten; no instance made for arguments refused before the guest
//! runs (the `everything` sample); and the metrics listener's own connection
//! limits.

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use airlock_e2e::hostile::{airlock, answer, assert_limit, call, tools_with};
use airlock_e2e::http::read_raw_reply;
use airlock_e2e::mcp::{complete, error_code, is_error, no_caps, text, with_meta};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolsDir, wait_until};
use serde_json::json;

/// A tool name no component serves.
const UNKNOWN_TOOL: &str = "no-such-tool-7f3a";

/// Finds the URL in the `metrics at http://…/metrics` log line.
fn metrics_url(server: &HttpServer) -> String {
    server.wait_for_log("metrics at http://");
    let stderr = server.stderr();
    let line = stderr
        .lines()
        .find(|line| line.contains("metrics at http://"))
        .expect("the log line just waited for");
    let start = line.find("http://").expect("a URL");
    line[start..]
        .chars()
        .take_while(|c| !c.is_whitespace() && *c != '"')
        .collect()
}

/// `GET /metrics`: checks its type and returns its lines.
fn scrape(url: &str) -> Vec<String> {
    let reply = Http::new(url).get();
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.header("content-type"),
        Some("application/openmetrics-text; version=1.0.0; charset=utf-8")
    );
    reply.text().lines().map(str::to_owned).collect()
}

/// The value of the sample `name` (with its labels, as rendered).
#[track_caller]
fn sample(lines: &[String], name: &str) -> f64 {
    let prefix = format!("{name} ");
    let line = lines
        .iter()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no sample {name} in:\n{}", lines.join("\n")));
    line[prefix.len()..].parse().expect("a number")
}

/// The labels of a `tools/call` operation.
fn tools_call(tool: &str, error_type: &str, outcome: &str) -> String {
    format!(
        "mcp_server_operation_duration_seconds_count{{mcp_method_name=\"tools/call\",\
         gen_ai_tool_name=\"{tool}\",gen_ai_prompt_name=\"\",error_type=\"{error_type}\",\
         mcp_protocol_version=\"2026-07-28\",airlock_outcome=\"{outcome}\"}}"
    )
}

#[test]
fn calls_move_the_counters_with_bounded_labels() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0", "--call-timeout", "300ms"])
        .start_http();
    let url = metrics_url(&server);
    let client = server.client();

    let before = scrape(&url);
    assert_eq!(sample(&before, "airlock_components_loaded"), 2.0);
    assert_eq!(sample(&before, "airlock_instances_busy"), 0.0);
    assert!(
        !before
            .iter()
            .any(|line| line.starts_with("airlock_limit_hits_total")),
        "no limit hit yet"
    );

    answer(&call(&client, "sha256", json!({"text": "abc"})));
    let unknown = call(&client, UNKNOWN_TOOL, json!({}));
    assert_eq!(error_code(&unknown), -32602, "{unknown}");
    assert_limit(&call(&client, "spin", json!({})), &["time limit"]);

    let after = scrape(&url);
    assert_eq!(sample(&after, &tools_call("sha256", "", "ok")), 1.0);
    assert_eq!(
        sample(&after, &tools_call("spin", "tool_error", "failed")),
        1.0
    );
    assert_eq!(
        sample(&after, &tools_call("", "-32602", "unknown")),
        1.0,
        "the unknown tool is counted without its name"
    );
    assert!(
        !after.iter().any(|line| line.contains(UNKNOWN_TOOL)),
        "an unknown tool name became a label value"
    );
    assert_eq!(
        sample(&after, "airlock_limit_hits_total{kind=\"deadline\"}"),
        1.0
    );
    assert!(sample(&after, "airlock_instantiate_duration_seconds_count") >= 2.0);
    assert_eq!(
        sample(&after, "airlock_mrtr_rounds_count"),
        1.0,
        "one request completed (sha256; the failed spin is no completed flow)"
    );
}

/// How many instances were made: the count of the instantiation
/// histogram (0 before its first sample).
fn instances_made(url: &str) -> f64 {
    let name = "airlock_instantiate_duration_seconds_count ";
    scrape(url)
        .iter()
        .find_map(|line| line.strip_prefix(name))
        .map_or(0.0, |value| value.parse().expect("a number"))
}

#[test]
fn arguments_refused_before_the_guest_runs_make_no_instance() {
    let tools = ToolsDir::with(&["everything"]);
    let server = Airlock::new(&tools)
        .with_cache()
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start_http();
    let url = metrics_url(&server);
    let client = server.client();
    let before = instances_made(&url);

    for arguments in [json!({}), json!({"name": 7})] {
        let refused = call(&client, "greet", arguments);
        let result = complete(&refused);
        assert!(is_error(result), "{refused}");
        assert!(
            text(result).starts_with(
                "Tool 'greet' was not run: its arguments do not match its input schema: "
            ),
            "{refused}"
        );
    }
    let prompt = client.rpc(
        "prompts/get",
        json!({"name": "test_prompt_with_arguments", "arguments": {"arg1": "a"}}),
        no_caps(),
    );
    assert_eq!(error_code(&prompt), -32602, "{prompt}");
    assert_eq!(instances_made(&url), before, "nothing was instantiated");

    answer(&call(&client, "greet", json!({"name": "Ada"})));
    assert!(
        instances_made(&url) > before,
        "a call that runs makes an instance"
    );
}

#[test]
fn metrics_have_their_own_listener_beside_the_health_probes() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start_http();
    let url = metrics_url(&server);
    assert_ne!(url, server.url().replace("/mcp", "/metrics"));
    let on_mcp = Http::new(&server.url().replace("/mcp", "/metrics")).get();
    assert_eq!(on_mcp.status, 404, "the MCP listener serves no metrics");
    let health = Http::new(&url.replace("/metrics", "/healthz")).get();
    assert_eq!(health.status, 200, "{}", health.text());
}

/// The tool names that label `mcp_server_operation_duration_seconds`.
fn labelled_tools(lines: &[String]) -> BTreeSet<String> {
    const LABEL: &str = "gen_ai_tool_name=\"";
    lines
        .iter()
        .filter(|line| line.starts_with("mcp_server_operation_duration_seconds_count{"))
        .filter_map(|line| {
            let start = line.find(LABEL)? + LABEL.len();
            let name = &line[start..start + line[start..].find('"')?];
            (!name.is_empty()).then(|| name.to_owned())
        })
        .collect()
}

/// The names the `renaming` guest lists now besides `rename`, once they
/// differ from `before`.
fn renamed_tools(server: &HttpServer, before: &BTreeSet<String>) -> BTreeSet<String> {
    wait_until("the renamed tools", || {
        let names: BTreeSet<String> = server
            .client()
            .tool_names()
            .into_iter()
            .filter(|name| name != "rename")
            .collect();
        if names.is_empty() || names.intersection(before).next().is_some() {
            Err(format!("listed: {names:?}"))
        } else {
            Ok(names)
        }
    })
}

#[test]
fn the_series_of_renamed_tools_are_forgotten() {
    let server = Airlock::new(&ToolsDir::with(&["renaming"]))
        .args(["--metrics-listen", "127.0.0.1:0", "--relist-interval", "0s"])
        .start_http();
    let url = metrics_url(&server);
    let client = server.client();
    let mut loaded = BTreeSet::new();
    for generation in 0..6 {
        if generation > 0 {
            answer(&call(&client, "rename", json!({})));
        }
        loaded = renamed_tools(&server, &loaded);
        for name in &loaded {
            assert_eq!(answer(&call(&client, name, json!({}))), *name);
        }
    }
    let labelled = labelled_tools(&scrape(&url));
    loaded.insert("rename".to_owned());
    assert!(
        labelled.is_subset(&loaded),
        "series of tools no longer loaded remain: {:?} (loaded: {loaded:?})",
        labelled.difference(&loaded).collect::<Vec<_>>()
    );
    assert_eq!(
        labelled, loaded,
        "every tool loaded now was called, and has its series"
    );
}

/// The metrics listener's `host:port`.
fn metrics_addr(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/metrics")
        .to_owned()
}

#[test]
fn a_trickled_head_on_the_metrics_port_is_cut_at_the_header_timeout() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .args([
            "--metrics-listen",
            "127.0.0.1:0",
            "--http-header-timeout",
            "1s",
        ])
        .start_http();
    let addr = metrics_addr(&metrics_url(&server));
    let mut stream = TcpStream::connect(&addr).expect("connect to the metrics port");
    stream
        .write_all(format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nX-Trickle: ").as_bytes())
        .unwrap();
    stream
        .set_read_timeout(Some(Duration::from_millis(250)))
        .unwrap();
    // One more byte of the header every quarter of a second, never its end.
    let bound = Duration::from_secs(20);
    let start = Instant::now();
    let mut buf = [0u8; 256];
    loop {
        assert!(
            start.elapsed() < bound,
            "a trickled head kept its connection open for {bound:?} (--http-header-timeout 1s)"
        );
        if stream.write_all(b"a").is_err() {
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => panic!(
                "an answer to a head that never ended: {}",
                String::from_utf8_lossy(&buf[..n])
            ),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    // The listener goes on serving.
    assert!(!scrape(&metrics_url(&server)).is_empty());
}

#[test]
fn past_its_cap_the_metrics_port_closes_the_longest_silent_connection_and_mcp_still_answers() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0"])
        // Silent connections are not closed by their timeout during the test.
        .args(["--http-header-timeout", "120s"])
        // Through its variable, which a build without the option (run with
        // AIRLOCK_E2E_BIN) ignores instead of refusing to start.
        .env("AIRLOCK_METRICS_MAX_CONNECTIONS", "2")
        .start_http();
    let url = metrics_url(&server);
    let addr = metrics_addr(&url);
    let connect = || TcpStream::connect(&addr).expect("connect to the metrics port");
    // Two connections that send nothing take both slots, the first longest.
    let mut first = connect();
    std::thread::sleep(Duration::from_millis(100));
    let mut second = connect();
    let third = connect();
    (&third)
        .write_all(
            format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    // The third is served: the first was closed to admit it.
    let reply = read_raw_reply(third);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(reply.text().ends_with("# EOF\n"), "{}", reply.text());
    assert_closed(&mut first);
    second
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 64];
    match second.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the second connection was closed too: {other:?}"),
    }
    // MCP clients are not shut out.
    let (_, reply) = server
        .client()
        .send("server/discover", with_meta(json!({}), no_caps()));
    assert_eq!(reply.status, 200, "{}", reply.text());
    server.wait_for_log("--metrics-max-connections");
}

/// Reads `stream` until the server closes it; panics if it sends anything
/// or is still open after a generous bound.
#[track_caller]
fn assert_closed(stream: &mut TcpStream) {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut buf = [0u8; 64];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Err(e) if matches!(e.kind(), ErrorKind::ConnectionReset) => {}
        other => panic!("the connection was not closed: {other:?}"),
    }
}

/// Connections a client holds open against one port without a request:
/// most send nothing, some a request head they never end (slowloris). Each
/// one the server closes is opened again at once, until dropped.
struct HeldConnections {
    stop: Arc<AtomicBool>,
    holder: Option<std::thread::JoinHandle<usize>>,
}

impl HeldConnections {
    /// Opens `count` connections to `addr` (one in twenty with a partial
    /// head) and keeps them open; returns once all are open, or once the
    /// server's listen backlog is full (then the holder keeps trying).
    fn open(addr: &str, count: usize) -> HeldConnections {
        let partial = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nUser-Agent: slow");
        let addr: std::net::SocketAddr = addr.parse().unwrap();
        let open = move |n: usize| {
            let stream = TcpStream::connect_timeout(&addr, Duration::from_millis(250)).ok()?;
            if n.is_multiple_of(20) {
                (&stream).write_all(partial.as_bytes()).ok()?;
            }
            stream.set_nonblocking(true).ok()?;
            Some(stream)
        };
        let mut backlog_full = false;
        let mut held: Vec<Option<TcpStream>> = (0..count)
            .map(|n| {
                let stream = if backlog_full { None } else { open(n) };
                backlog_full = stream.is_none();
                stream
            })
            .collect();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let holder = std::thread::spawn(move || {
            // Bounded even if never dropped.
            let until = Instant::now() + Duration::from_secs(180);
            let mut reopened = 0;
            while !stopped.load(Ordering::Relaxed) && Instant::now() < until {
                for (n, slot) in held.iter_mut().enumerate() {
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    let mut buf = [0u8; 1024];
                    let closed = match slot {
                        Some(stream) => !matches!(
                            stream.read(&mut buf),
                            Err(ref e) if e.kind() == ErrorKind::WouldBlock
                        ),
                        None => true,
                    };
                    if closed {
                        reopened += usize::from(slot.is_some());
                        *slot = open(n);
                    }
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            reopened
        });
        HeldConnections {
            stop,
            holder: Some(holder),
        }
    }

    /// Stops holding; returns how many connections were opened again.
    fn release(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        self.holder.take().unwrap().join().unwrap()
    }
}

impl Drop for HeldConnections {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_scrape_gets_through_while_hundreds_of_connections_are_held_open_on_the_metrics_port() {
    let tools = tools_with(None);
    let server = airlock(&tools)
        .args(["--metrics-listen", "127.0.0.1:0"])
        // The guarantee does not rest on the timeouts: held connections are
        // not closed by them during the test.
        .args(["--http-header-timeout", "120s"])
        .start_http();
    let url = metrics_url(&server);
    let addr = metrics_addr(&url);
    // 800 connections against a cap of 16, reopened as they are closed.
    let held = HeldConnections::open(&addr, 800);
    let lines = scrape(&url);
    assert_eq!(lines.last().map(String::as_str), Some("# EOF"));
    let ready = Http::new(&format!("http://{addr}/readyz")).get();
    assert_eq!(ready.status, 200, "{}", ready.text());
    let reopened = held.release();
    assert!(
        reopened > 0,
        "the server closed none of the held connections to admit the scrape"
    );
    server.wait_for_log("--metrics-max-connections");
}
