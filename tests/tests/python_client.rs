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
//! `tests/clients/python/setup` makes the SDK's virtual environment once per
//! test binary (it is cached across runs).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use airlock_e2e::sdk_clients::{self, Transport};
use serde_json::{Value, json};

/// The driver's own limit for the whole run, in seconds.
const DRIVER_TIMEOUT_SECS: &str = "60";

/// The virtual environment's python, made by the setup script on first use.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| sdk_clients::install("python"))
}

/// Runs `drive.py --mode <mode> --flow <flow>` against a fresh server that
/// serves `component`, and returns the JSON report it prints.
fn drive(transport: Transport, mode: &str, flow: &str, component: &str) -> Value {
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
    sdk_clients::drive(cmd, transport, component)
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
