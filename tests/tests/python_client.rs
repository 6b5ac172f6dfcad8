//! The official MCP Python SDK as the client: `tests/clients/python/drive.py`
//! (the `mcp` package pinned in `requirements.txt`) drives the sample tools
//! that ask for input (`work_items`, `deploy`, `summarize`, `workspace`) to a
//! complete result, over HTTP and over stdio, in both of the SDK's connect
//! modes:
//!
//! * `auto`, its default: a `server/discover` probe, falling back to
//!   `initialize`; against Airlock it settles on 2026-07-28, so input
//!   requests travel as MRTR `inputRequests` that the SDK retries itself.
//! * `legacy`: the `initialize` handshake at a 2025 version, a stateful
//!   session whose input requests arrive as server-to-client requests.
//!
//! Either way the SDK hands each request to the driver's elicitation,
//! sampling or roots callback, and every test checks both what the callbacks
//! were asked and that the final result carries their answers.
//!
//! The `tasks` tests drive `everything`'s task tools through the tasks
//! extension, as a client extension of the SDK (`tasks_extension.py`): it
//! declares the extension, claims the `CreateTaskResult` of `tools/call`, and
//! polls `tasks/get` (answering with `tasks/update`) until the task ends.
//!
//! A client that lists the tools right after starting a stdio server whose
//! first load is slow sees every tool (the list waits for the load).
//!
//! The OAuth test has the SDK's OAuth client authorize against a local
//! authorization server (`oauth_server.py`, built on the SDK's own
//! authorization-server routes) and step up on a 403 `insufficient_scope`.
//!
//! `tests/clients/python/setup` makes the SDK's virtual environment once per
//! test binary (it is cached across runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use airlock_e2e::daemon::{Daemon, free_port};
use airlock_e2e::numbered::{numbered_components, numbered_tool};
use airlock_e2e::sdk_clients::{self, Transport};
use airlock_e2e::{Airlock, ToolsDir};
use serde_json::{Value, json};

/// The driver's own limit for the whole run, in seconds.
const DRIVER_TIMEOUT_SECS: &str = "60";

/// The virtual environment's python, made by the setup script on first use.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| sdk_clients::install("python"))
}

/// `drive.py --mode <mode> --flow <flow>`, without its server.
fn driver(mode: &str, flow: &str) -> Command {
    let mut cmd = Command::new(python());
    cmd.arg(sdk_clients::client_dir("python").join("drive.py"))
        .args([
            "--mode",
            mode,
            "--flow",
            flow,
            "--timeout",
            DRIVER_TIMEOUT_SECS,
        ]);
    cmd
}

/// Runs `drive.py --mode <mode> --flow <flow>` against a fresh server that
/// serves `component`, and returns the JSON report it prints.
fn drive(transport: Transport, mode: &str, flow: &str, component: &str) -> Value {
    sdk_clients::drive(driver(mode, flow), transport, component)
}

/// Checks how the connection was negotiated: `auto` discovers 2026-07-28,
/// `legacy` completes `initialize` at a 2025 version.
fn assert_negotiated(report: &Value, mode: &str) {
    let (handshake, version) = (&report["handshake"], &report["protocolVersion"]);
    match mode {
        "auto" => {
            assert_eq!(handshake, "discover", "{report:#}");
            assert_eq!(version, "2026-07-28", "{report:#}");
        }
        _ => {
            assert_eq!(handshake, "initialize", "{report:#}");
            assert!(
                version.as_str().is_some_and(|v| v.starts_with("2025-")),
                "a legacy session at a 2025 version: {report:#}"
            );
        }
    }
}

/// Two forms (the resolution, then the original item), and both answers in
/// the update.
fn work_items(transport: Transport, mode: &str) {
    let report = drive(transport, mode, "work-items", "work_items");
    assert_negotiated(&report, mode);
    assert_eq!(
        report["callbacks"],
        json!([
            {
                "kind": "elicitation",
                "message": "Work item 4711 is being resolved. What is the resolution?",
                "fields": ["resolution"],
                "content": {"resolution": "Duplicate"}
            },
            {
                "kind": "elicitation",
                "message": "Work item 4711 is a duplicate. Of which work item?",
                "fields": ["duplicateOf"],
                "content": {"duplicateOf": 1234}
            }
        ]),
        "{report:#}"
    );
    assert_eq!(
        report["text"],
        "Updated work item 4711: State = Resolved, Resolution = Duplicate, Duplicate Of = 1234",
        "{report:#}"
    );
    assert_eq!(
        report["structuredContent"],
        json!({
            "workItemId": 4711,
            "fields": {"State": "Resolved", "Resolution": "Duplicate", "Duplicate Of": 1234}
        }),
        "{report:#}"
    );
}

/// One confirmation form, accepted, and the deployment done.
fn deploy(transport: Transport, mode: &str) {
    let report = drive(transport, mode, "deploy", "deploy");
    assert_negotiated(&report, mode);
    assert_eq!(
        report["callbacks"],
        json!([{
            "kind": "elicitation",
            "message": "Deploy billing to production?",
            "fields": ["ok"],
            "content": {"ok": true}
        }]),
        "{report:#}"
    );
    assert_eq!(
        report["text"], "Deployed billing to production",
        "{report:#}"
    );
}

/// One sampling request carrying the text, and the "model's" summary as the
/// result.
fn summarize(transport: Transport, mode: &str) {
    let report = drive(transport, mode, "summarize", "summarize");
    assert_negotiated(&report, mode);
    let summary = "Airlock runs each tool call in a fresh sandbox (py-sdk-summary-7f3a).";
    let callbacks = report["callbacks"].as_array().expect("a callback log");
    assert_eq!(callbacks.len(), 1, "{report:#}");
    let sampling = &callbacks[0];
    assert_eq!(sampling["kind"], "sampling", "{report:#}");
    assert_eq!(sampling["maxTokens"], 200, "{report:#}");
    assert!(
        sampling["systemPrompt"]
            .as_str()
            .is_some_and(|p| p.starts_with("You summarize text.")),
        "{report:#}"
    );
    assert_eq!(
        sampling["messages"],
        json!([
            "Summarize this text:\n\nAirlock hosts MCP tools as WebAssembly components, \
             one fresh instance per request."
        ]),
        "{report:#}"
    );
    assert_eq!(
        report["text"],
        format!("{summary}\n(Summary written by py-sdk-test-model.)"),
        "{report:#}"
    );
    assert_eq!(
        report["structuredContent"],
        json!({"summary": summary, "model": "py-sdk-test-model"}),
        "{report:#}"
    );
}

/// One roots request, and the roots listed back.
fn workspace(transport: Transport, mode: &str) {
    let report = drive(transport, mode, "workspace", "workspace");
    assert_negotiated(&report, mode);
    assert_eq!(
        report["callbacks"],
        json!([{
            "kind": "roots",
            "content": ["file:///srv/py-sdk-e2e/app", "file:///srv/py-sdk-e2e/notes.md"]
        }]),
        "{report:#}"
    );
    assert_eq!(
        report["text"],
        "The client exposes 2 roots:\n- App: file:///srv/py-sdk-e2e/app\n- file:///srv/py-sdk-e2e/notes.md",
        "{report:#}"
    );
    assert_eq!(
        report["structuredContent"],
        json!({"roots": [
            {"uri": "file:///srv/py-sdk-e2e/app", "name": "App"},
            {"uri": "file:///srv/py-sdk-e2e/notes.md"}
        ]}),
        "{report:#}"
    );
}

/// The steps of the task the report's call became, without the `working`
/// statuses (how many polls see a task working is a matter of timing).
fn task_steps(report: &Value) -> Vec<Value> {
    let steps = report["task"].as_array().expect("a task log");
    steps
        .iter()
        .filter(|step| step["status"] != "working" || step["kind"] == "created")
        .cloned()
        .collect()
}

/// `slow_compute` with the tasks extension declared: a task, created
/// `working`, polled until `completed`, whose result is the computation's.
fn task_compute(transport: Transport) {
    let report = drive(transport, "auto", "task-compute", "everything");
    assert_negotiated(&report, "auto");
    assert_eq!(
        task_steps(&report),
        [
            json!({"kind": "created", "tool": "slow_compute", "status": "working"}),
            json!({"kind": "status", "status": "completed"}),
        ],
        "{report:#}"
    );
    assert_eq!(report["callbacks"], json!([]), "{report:#}");
    assert_eq!(
        report["text"], "Computed \"sdk\" in 1 second(s)",
        "{report:#}"
    );
}

/// `confirm_delete` with the tasks extension declared: the task asks for a
/// confirmation (`input_required`), the client's elicitation callback
/// accepts it, `tasks/update` carries the answer, and the task completes.
fn task_confirm(transport: Transport) {
    let report = drive(transport, "auto", "task-confirm", "everything");
    assert_negotiated(&report, "auto");
    assert_eq!(
        task_steps(&report),
        [
            json!({"kind": "created", "tool": "confirm_delete", "status": "working"}),
            json!({"kind": "status", "status": "input_required", "inputRequests": ["r2.confirm"]}),
            json!({"kind": "update", "keys": ["r2.confirm"]}),
            json!({"kind": "status", "status": "completed"}),
        ],
        "{report:#}"
    );
    assert_eq!(
        report["callbacks"],
        json!([{
            "kind": "elicitation",
            "message": "Delete x.txt?",
            "fields": ["confirm"],
            "content": {"confirm": true}
        }]),
        "{report:#}"
    );
    assert_eq!(report["text"], "Deleted x.txt", "{report:#}");
}

/// A legacy (2025) session cannot declare the extension, so the same call
/// stays a plain call: no task, and the result all the same.
fn task_compute_legacy(transport: Transport) {
    let report = drive(transport, "legacy", "task-compute", "everything");
    assert_negotiated(&report, "legacy");
    assert_eq!(report["task"], json!([]), "{report:#}");
    assert_eq!(
        report["text"], "Computed \"sdk\" in 1 second(s)",
        "{report:#}"
    );
}

/// Copies of the `numbered` guest served beside a flow's component: with
/// the stdio server compiling them as it starts, its first load takes
/// seconds.
const SLOW_LOAD: usize = 16;

/// The SDK lists the tools as soon as it has connected (so does the MCP
/// Inspector's CLI, before it calls one): over stdio that is right after it
/// started the server, which is still compiling its components. The list
/// waits for the first load, so the client sees every tool, in both modes.
#[test]
fn a_list_right_after_start_over_stdio_sees_every_tool_of_a_slow_load() {
    let tools = ToolsDir::with(&["deploy"]);
    for (number, copy) in numbered_components(SLOW_LOAD).iter().enumerate() {
        tools.add_bytes(&format!("{}.wasm", numbered_tool(number)), copy);
    }
    let mut expected: Vec<String> = (0..SLOW_LOAD).map(numbered_tool).collect();
    expected.extend(["confirm".to_owned(), "deploy".to_owned()]);
    expected.sort();
    for mode in ["auto", "legacy"] {
        let report = sdk_clients::drive_tools(driver(mode, "deploy"), Transport::Stdio, &tools);
        assert_negotiated(&report, mode);
        assert_eq!(report["tools"], json!(expected), "{mode}");
        assert_eq!(
            report["text"], "Deployed billing to production",
            "{report:#}"
        );
    }
}

/// Defines a module per transport and mode (`http::auto`, `stdio::legacy`,
/// ...), each with one test per flow.
macro_rules! flow_tests {
    ($($transport_mod:ident: $transport:expr => [$($mode:ident),*];)*) => {$(
        /// The flows over one transport.
        mod $transport_mod {$(
            /// The flows in one client mode.
            mod $mode {
                use super::super::*;

                #[test]
                fn work_items() {
                    super::super::work_items($transport, stringify!($mode));
                }

                #[test]
                fn deploy() {
                    super::super::deploy($transport, stringify!($mode));
                }

                #[test]
                fn summarize() {
                    super::super::summarize($transport, stringify!($mode));
                }

                #[test]
                fn workspace() {
                    super::super::workspace($transport, stringify!($mode));
                }
            }
        )*}
    )*};
}

flow_tests! {
    http: Transport::Http => [auto, legacy];
    stdio: Transport::Stdio => [auto, legacy];
}

/// The task flows over each transport.
mod tasks {
    /// Defines a module per transport with the task tests.
    macro_rules! task_tests {
        ($($transport_mod:ident: $transport:expr;)*) => {$(
            /// The task flows over one transport.
            mod $transport_mod {
                use airlock_e2e::sdk_clients::Transport;

                #[test]
                fn slow_compute() {
                    super::super::task_compute($transport);
                }

                #[test]
                fn confirm_delete() {
                    super::super::task_confirm($transport);
                }

                #[test]
                fn legacy_session_stays_a_plain_call() {
                    super::super::task_compute_legacy($transport);
                }
            }
        )*};
    }

    task_tests! {
        http: Transport::Http;
        stdio: Transport::Stdio;
    }
}

/// Sorted words of a space-separated scope.
fn scopes(scope: &Value) -> Vec<&str> {
    let mut words: Vec<&str> = scope.as_str().unwrap_or_default().split(' ').collect();
    words.sort_unstable();
    words
}

/// The SDK's OAuth client (`OAuthClientProvider`) against Airlock and a
/// local authorization server (`oauth_server.py`: the SDK's own
/// authorization-server routes, issuing ES256 JWTs with a key it makes at
/// start). Every tool needs `mcp:tools`, `deploy` also `deploy:write`, and
/// any caller may see what it may not use. The client's first 401 names
/// `mcp:tools`; it discovers the metadata, registers, authorizes for that
/// scope, lists the tools and calls `deploy`: a 403 `insufficient_scope`.
/// It authorizes again for the union of its scopes and the challenged one,
/// and the retried call runs to its result.
#[test]
fn the_sdk_steps_up_to_the_scope_a_403_names_and_the_call_then_succeeds() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (as_port, port) = (free_port(), free_port());
    let issuer = format!("http://127.0.0.1:{as_port}/");
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let (key, log) = (dir.path().join("as.pem"), dir.path().join("as.jsonl"));
    let mut command = Command::new(python());
    command
        .arg(sdk_clients::client_dir("python").join("oauth_server.py"))
        .args(["--port", &as_port.to_string(), "--issuer", &issuer])
        .arg("--public-key")
        .arg(&key)
        .arg("--log")
        .arg(&log);
    let mut authorization_server = Daemon::spawn(command, "tests/clients/python/setup");
    authorization_server.wait_for_port(as_port);

    let tools = ToolsDir::with(&["hash", "deploy"]);
    tools.add_bytes(
        "deploy.toml",
        b"[tools.deploy]\nallow = [\"scope:deploy:write\"]\n",
    );
    let policy = dir.path().join("access.toml");
    std::fs::write(
        &policy,
        "[require]\nallow = [\"scope:mcp:tools\"]\n[list]\nallow = [\"authenticated\"]\n",
    )
    .unwrap();
    let server = Airlock::new(&tools)
        .listen(&format!("127.0.0.1:{port}"))
        .args(["--oauth-resource", &resource])
        .args(["--oauth-authorization-server", &issuer])
        .args(["--oauth-scope", "mcp:tools"])
        .arg("--jwt-key-file")
        .arg(&key)
        .arg("--access-policy")
        .arg(&policy)
        .start_http();

    let mut driver = Command::new(python());
    driver
        .arg(sdk_clients::client_dir("python").join("drive.py"))
        .args(["--mode", "auto", "--flow", "deploy", "--oauth"])
        .args(["--timeout", DRIVER_TIMEOUT_SECS]);
    let report = sdk_clients::drive_http(driver, &server);

    assert_eq!(
        report["tools"],
        json!(["confirm", "deploy", "sha256"]),
        "{report:#}"
    );
    let asked: Vec<Vec<&str>> = report["authorizations"]
        .as_array()
        .expect("the authorizations")
        .iter()
        .map(|authorization| {
            assert_eq!(authorization["resource"], resource.as_str(), "{report:#}");
            scopes(&authorization["scope"])
        })
        .collect();
    assert_eq!(
        asked,
        [vec!["mcp:tools"], vec!["deploy:write", "mcp:tools"]],
        "{report:#}"
    );
    // 401 (no token), then the weak token's requests; the call's 403, and
    // its retry with the stronger token.
    let statuses = report["statuses"].as_array().expect("the statuses");
    assert_eq!(statuses.first(), Some(&json!(401)), "{report:#}");
    let refused = statuses
        .iter()
        .position(|status| status == 403)
        .unwrap_or_else(|| panic!("no 403: {report:#}"));
    assert_eq!(statuses.get(refused + 1), Some(&json!(200)), "{report:#}");
    assert_eq!(
        statuses.iter().filter(|status| **status != 200).count(),
        2,
        "{report:#}"
    );
    assert_eq!(
        report["text"], "Deployed billing to production",
        "{report:#}"
    );

    // What the authorization server saw and issued.
    let issued: Vec<Value> = std::fs::read_to_string(&log)
        .expect("the authorization server's log")
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .filter(|entry: &Value| entry["event"] == "token")
        .collect();
    let granted: Vec<Vec<&str>> = issued.iter().map(|token| scopes(&token["scope"])).collect();
    assert_eq!(
        granted,
        [vec!["mcp:tools"], vec!["deploy:write", "mcp:tools"]],
        "{issued:#?}"
    );
    for token in &issued {
        assert_eq!(token["claims"]["iss"], issuer.as_str(), "{token:#}");
        assert_eq!(token["claims"]["aud"], resource.as_str(), "{token:#}");
        assert_eq!(token["claims"]["scope"], token["scope"], "{token:#}");
    }
}
