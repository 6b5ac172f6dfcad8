//! Health probes and graceful restarts, end to end: `/healthz` and `/readyz`
//! answer the probes of an orchestrator (no token, any `Host`), `/readyz`
//! stays ready when the shared task store is gone and reports it degraded
//! (with a metric and one log line) while plain calls go on, and SIGTERM
//! drains the server the way a load balancer needs: readiness fails first
//! while requests are still
//! served, then idle connections close, requests in flight finish (or are
//! cut after the shutdown timeout), and the process exits 0.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use airlock_e2e::http::HTTP_TIMEOUT;
use airlock_e2e::mcp::{complete, text, with_meta};
use airlock_e2e::{
    Airlock, HttpServer, McpClient, RedisServer, Reply, ToolCall, ToolsDir, all_caps, raw_http,
    wait_until,
};
use serde_json::{Value, json};

/// How long a stopping server may take to exit: a liveness bound.
const EXIT_TIMEOUT: Duration = Duration::from_secs(30);

/// A GET of `path` over a fresh connection, with this `Host`.
fn probe(server: &HttpServer, path: &str, host: &str) -> Reply {
    raw_http(
        &server.addr(),
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn json_body(reply: &Reply) -> Value {
    serde_json::from_slice(&reply.body)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&reply.body)))
}

/// Reads one response (with a `Content-Length`) from a keep-alive
/// connection, leaving the connection open; returns its status line.
fn read_one_response(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        let read = stream.read(&mut byte).expect("read a response head");
        assert_eq!(read, 1, "the connection closed inside a response head");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length: usize = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("content-length")
                .then(|| value.trim().parse().ok())?
        })
        .unwrap_or_else(|| panic!("no Content-Length in {head}"));
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).expect("read a response body");
    head.lines().next().unwrap_or_default().to_owned()
}

/// A keep-alive connection that served one request and now sits idle.
fn idle_connection(server: &HttpServer) -> TcpStream {
    let mut stream = TcpStream::connect(server.addr()).expect("connect");
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .expect("write a request");
    let status = read_one_response(&mut stream);
    assert!(status.contains(" 200 "), "{status}");
    stream
}

/// Whether the server closed `stream` cleanly (end of file, nothing sent).
fn closed_by_server(mut stream: TcpStream) -> bool {
    stream.set_read_timeout(Some(EXIT_TIMEOUT)).unwrap();
    let mut rest = Vec::new();
    matches!(stream.read_to_end(&mut rest), Ok(0))
}

#[test]
fn probes_need_no_token_and_accept_any_host() {
    let tools = ToolsDir::with(&["everything"]);
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, "probe-test-token-0123456789 alice\n").unwrap();
    let server = Airlock::new(&tools)
        .arg("--tokens-file")
        .arg(&tokens)
        .start_http();
    // The kubelet names the pod's IP in Host, and sends no token.
    for host in ["localhost", "10.1.2.3:8080"] {
        let live = probe(&server, "/healthz", host);
        assert_eq!(
            live.status,
            200,
            "/healthz with Host {host}: {}",
            live.text()
        );
        assert_eq!(json_body(&live), json!({"status": "ok"}));
        let ready = probe(&server, "/readyz", host);
        assert_eq!(
            ready.status,
            200,
            "/readyz with Host {host}: {}",
            ready.text()
        );
        assert_eq!(json_body(&ready), json!({"status": "ok"}));
    }
    // The MCP endpoint still wants both.
    let foreign = probe(&server, "/mcp", "10.1.2.3:8080");
    assert_eq!(foreign.status, 403, "{}", foreign.text());
    let anonymous = probe(&server, "/mcp", "localhost");
    assert_eq!(anonymous.status, 401, "{}", anonymous.text());
}

/// The value of `airlock_dependency_up{dependency="task_store"}`.
fn task_store_up(server: &HttpServer) -> Option<f64> {
    let prefix = "airlock_dependency_up{dependency=\"task_store\"} ";
    server
        .scrape_metrics()
        .lines()
        .find_map(|line| line.strip_prefix(prefix))
        .map(|value| value.parse().expect("a number"))
}

#[test]
fn readiness_stays_while_the_task_store_is_down_and_the_degraded_part_is_reported() {
    let mut redis = RedisServer::start();
    let tools = ToolsDir::with(&["hash", "report"]);
    let server = Airlock::new(&tools)
        .args(["--task-store", &redis.url()])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start_http();
    let ready = probe(&server, "/readyz", "localhost");
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert_eq!(json_body(&ready), json!({"status": "ok"}));
    assert_eq!(task_store_up(&server), Some(1.0));

    // Redis goes away: every host of a fleet shares it, so readiness stays
    // (no empty Service), and the degraded part is reported.
    redis.kill();
    let degraded = wait_until("/readyz to report the task store", || {
        let reply = probe(&server, "/readyz", "localhost");
        let body = json_body(&reply);
        if body.get("degraded").is_some() {
            Ok((reply.status, body))
        } else {
            Err(format!("{} {body}", reply.status))
        }
    });
    assert_eq!(
        degraded,
        (
            200,
            json!({"status": "ok", "degraded": ["task store unreachable"]})
        )
    );
    assert_eq!(task_store_up(&server), Some(0.0));
    // Plain calls do not need the store.
    let client = server.client();
    let response = client.call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert!(text(complete(&response)).contains("ba7816bf"), "{response}");
    // A task call gets a clear error.
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    let task = client.call(&ToolCall::new("build_report", json!({"items": ["x"]})).caps(caps));
    let message = task["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("task store"), "{task}");
    // One warning for the outage, however often it is probed.
    probe(&server, "/readyz", "localhost");
    let log = server.stderr();
    assert_eq!(
        log.matches("degraded: the task store does not answer")
            .count(),
        1,
        "{log}"
    );

    redis.restart();
    wait_until("/readyz to report nothing degraded", || {
        let reply = probe(&server, "/readyz", "localhost");
        let body = json_body(&reply);
        if reply.status == 200 && body == json!({"status": "ok"}) {
            Ok(())
        } else {
            Err(format!("{} {body}", reply.status))
        }
    });
    assert_eq!(task_store_up(&server), Some(1.0));
    server.wait_for_log("the task store answers again");
}

#[test]
fn sigterm_turns_readiness_off_first_then_drains_and_exits_0() {
    let tools = ToolsDir::with(&["everything"]);
    let mut server = Airlock::new(&tools)
        .args(["--shutdown-drain-delay", "5s"])
        .start_http();
    let idle = idle_connection(&server);
    // A plain call (no tasks extension) that outlasts the drain delay: it
    // reaches the server during the drain (the listener still accepts) and
    // is in flight when the server stops accepting.
    let slow = {
        let client = server.client();
        let call = ToolCall::new("slow_compute", json!({"seconds": 8, "label": "x"}));
        std::thread::spawn(move || client.send("tools/call", call.params()).1)
    };
    server.terminate();

    // During the drain: not ready, yet still serving, and asking clients
    // to close their connections after each response.
    let not_ready = wait_until("/readyz to answer 503", || {
        let reply = probe(&server, "/readyz", "localhost");
        if reply.status == 503 {
            Ok(reply)
        } else {
            Err(format!("{} {}", reply.status, reply.text()))
        }
    });
    assert_eq!(
        json_body(&not_ready),
        json!({"status": "not ready", "reasons": ["shutting down"]})
    );
    assert_eq!(probe(&server, "/healthz", "localhost").status, 200);
    let (_, listed) = server
        .client()
        .send("tools/list", with_meta(json!({}), all_caps()));
    assert_eq!(listed.status, 200, "{}", listed.text());
    assert!(
        listed.message()["result"]["tools"].is_array(),
        "{}",
        listed.text()
    );
    assert_eq!(listed.header("connection"), Some("close"));

    // Then: the idle connection is closed by the server, not left to fail
    // under the next request; the call in flight finishes.
    assert!(
        closed_by_server(idle),
        "the idle connection was not closed cleanly"
    );
    let reply = slow.join().expect("the slow call's thread");
    assert_eq!(reply.status, 200, "{}", reply.text());
    let response = reply.message();
    assert_eq!(text(complete(&response)), r#"Computed "x" in 8 second(s)"#);
    assert_eq!(reply.header("connection"), Some("close"));
    let status = server.wait_exit(EXIT_TIMEOUT).expect("the server to exit");
    assert!(
        status.success(),
        "exit status {status}: {}",
        server.stderr()
    );
}

#[test]
fn requests_still_running_after_the_shutdown_timeout_are_cut() {
    let tools = ToolsDir::with(&["everything"]);
    let mut server = Airlock::new(&tools)
        .args(["--shutdown-drain-delay", "3s", "--shutdown-timeout", "1s"])
        .start_http();
    let client = server.client();
    let params = ToolCall::new("slow_compute", json!({"seconds": 600, "label": "y"})).params();
    let mut headers = client.headers_for("tools/call", &params);
    headers.set("Host", "localhost");
    headers.set("Connection", "close");
    let body =
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).to_string();
    headers.set("Content-Length", &body.len().to_string());
    let mut request = String::from("POST /mcp HTTP/1.1\r\n");
    for (name, value) in &headers.0 {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    // Sent before SIGTERM, read during the drain, running at its end.
    let mut stream = TcpStream::connect(server.addr()).expect("connect");
    stream.write_all(request.as_bytes()).expect("send the call");
    server.terminate();

    let status = server.wait_exit(EXIT_TIMEOUT).expect("the server to exit");
    assert!(
        status.success(),
        "exit status {status}: {}",
        server.stderr()
    );
    server.wait_for_log("cut by the shutdown timeout");
    stream.set_read_timeout(Some(HTTP_TIMEOUT)).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    assert!(
        answer.is_empty(),
        "the cut call was answered: {}",
        String::from_utf8_lossy(&answer)
    );
}
