//! Redis as production runs it: the task store and the single-use store over
//! `rediss://` (TLS, a certificate signed by a certificate authority made by
//! the test and trusted through `SSL_CERT_FILE`) with a password, and over
//! plain `redis://` with a password, against a real `redis-server` started
//! with `--tls-port` and `--requirepass`. A task runs through the store; a
//! wrong or missing password, and a certificate the host does not trust,
//! stop the start with the reason and without the password.

use std::path::Path;

use airlock_e2e::mcp::{all_caps, complete, result_type};
use airlock_e2e::redis::Access;
use airlock_e2e::{
    Airlock, Http, HttpServer, McpClient, RedisServer, ToolCall, ToolsDir, wait_until,
};
use serde_json::{Value, json};

const PASSWORD: &str = "a-redis-password-4f2e";

fn tasks_caps() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    caps
}

/// A host keeping its tasks and single-use records in the Redis at `url`,
/// trusting the certificates of `ca` (if any).
fn host(url: &str, ca: Option<&Path>) -> Airlock {
    let mut host = Airlock::new(&ToolsDir::with(&["report"]))
        .args(["--task-store", url])
        .args(["--single-use-store", url]);
    if let Some(ca) = ca {
        host = host.env("SSL_CERT_FILE", ca);
    }
    host
}

/// A task runs to its end through the store; `/readyz` (which asks the store)
/// answers 200; the log names the store without its password.
fn assert_tasks_run_through(server: &HttpServer, described: &str) {
    let readyz = server.url().replace("/mcp", "/readyz");
    let reply = Http::new(&readyz).get();
    assert_eq!(reply.status, 200, "{}", reply.text());

    let client = server.client();
    let created =
        client.call(&ToolCall::new("build_report", json!({"items": ["quick"]})).caps(tasks_caps()));
    assert_eq!(result_type(&created["result"]), "task", "{created}");
    let id = created["result"]["taskId"]
        .as_str()
        .expect("a task id")
        .to_owned();
    wait_until("the task to complete", || {
        let response = client.rpc("tasks/get", json!({"taskId": id}), tasks_caps());
        let task = complete(&response).clone();
        if task["status"] == "completed" {
            Ok(())
        } else {
            Err(task.to_string())
        }
    });
    let log = server.stderr();
    assert!(
        log.contains(described),
        "the store is not named {described}:\n{log}"
    );
    assert!(
        !log.contains(PASSWORD),
        "the password is in the log:\n{log}"
    );
}

/// Starting a host on `url` fails, saying `why` and not the password.
fn assert_start_refused(url: &str, ca: Option<&Path>, why: &[&str]) {
    let (status, stderr) = host(url, ca).run_expecting_exit();
    assert!(!status.success(), "started on {url}:\n{stderr}");
    let lower = stderr.to_lowercase();
    assert!(
        why.iter().any(|word| lower.contains(word)),
        "the refusal does not say {why:?}:\n{stderr}"
    );
    assert!(
        !stderr.contains(PASSWORD),
        "the password is in the log:\n{stderr}"
    );
}

#[test]
fn tasks_go_through_redis_over_tls_with_a_password() {
    let redis = RedisServer::start_with(Access {
        password: Some(PASSWORD.to_owned()),
        tls: true,
    });
    let ca = redis.ca_file().expect("a TLS server's authority");
    let url = redis.url();
    assert!(url.starts_with("rediss://:"), "{url}");
    let server = host(&url, Some(&ca)).start_http();
    let described = url.replace(&format!(":{PASSWORD}@"), "");
    assert_tasks_run_through(&server, &described);
}

#[test]
fn tasks_go_through_plain_redis_with_a_password() {
    let redis = RedisServer::start_with(Access {
        password: Some(PASSWORD.to_owned()),
        tls: false,
    });
    let url = redis.url();
    let server = host(&url, None).start_http();
    let described = url.replace(&format!(":{PASSWORD}@"), "");
    assert_tasks_run_through(&server, &described);
}

#[test]
fn a_wrong_password_or_an_untrusted_certificate_stops_the_start_with_the_reason() {
    let redis = RedisServer::start_with(Access {
        password: Some(PASSWORD.to_owned()),
        tls: true,
    });
    let ca = redis.ca_file().expect("a TLS server's authority");
    let wrong = format!("{PASSWORD}-not");
    assert_start_refused(
        &redis.url_with_password(Some(&wrong)),
        Some(&ca),
        &["authentication failed"],
    );
    assert_start_refused(
        &redis.url_with_password(None),
        Some(&ca),
        &["noauth", "authentication required"],
    );
    // The certificate chains to an authority the host was not told to trust.
    assert_start_refused(&redis.url(), None, &["certificate", "unknownissuer"]);
}
