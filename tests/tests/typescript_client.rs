//! The official TypeScript MCP SDK client (`@modelcontextprotocol/client`,
//! pinned in `tests/clients/typescript/package.json`) drives the sample tools
//! to completion, over HTTP and stdio, in two modes:
//!
//! * `legacy`: the `initialize` handshake and a session (2025-11-25); the
//!   server asks for input with requests of its own, which the client answers;
//! * `pinned`: `versionNegotiation: { mode: { pin: '2026-07-28' } }`:
//!   stateless, the server answers `input_required` and the client answers
//!   and calls again.
//!
//! `tests/clients/typescript/setup` installs the SDK once (npm, into the
//! user's cache) and `drive.mjs` runs one flow, answering every input request
//! with fixed values through the client's own elicitation, sampling and roots
//! handlers. The assertions check that those values reach the final result.
//!
//! Tests are named `<transport>_<mode>::<flow>`.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use airlock_e2e::sdk_clients::{self, Transport};
use serde_json::{Value, json};

/// The revision the legacy mode negotiates in `initialize`.
const LEGACY_REVISION: &str = "2025-11-25";

/// The revision the pinned mode asks for.
const PINNED_REVISION: &str = "2026-07-28";

/// How long one driver run may take in all (it enforces this itself).
const DRIVE_TIMEOUT_MS: &str = "60000";

/// The `duplicateOf` answer `drive.mjs` gives the work-items form.
const DUPLICATE_OF: i64 = 1717;

/// The model name `drive.mjs` reports for its sampling answer.
const MODEL: &str = "typescript-sdk-test-model";

/// The first root `drive.mjs` returns, and its name.
const APP_ROOT: (&str, &str) = ("file:///srv/airlock-e2e/app", "App");

/// The second root `drive.mjs` returns (it has no name).
const NOTES_ROOT: &str = "file:///srv/airlock-e2e/notes.md";

/// The SDK's `node_modules`, installed by `setup` once per test binary.
fn node_modules() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| sdk_clients::install("typescript"))
}

/// Which protocol era the client speaks.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// `initialize` and a session (2025-11-25).
    Legacy,
    /// Pinned to 2026-07-28: stateless, multi round-trip requests.
    Pinned,
}

/// Serves `component` and runs `drive.mjs --flow <flow>` against it; returns
/// the driver's JSON report.
fn drive(transport: Transport, mode: Mode, flow: &str, component: &str) -> Value {
    let mut cmd = Command::new("node");
    cmd.arg(sdk_clients::client_dir("typescript").join("drive.mjs"))
        .arg("--node-modules")
        .arg(node_modules())
        .args(["--flow", flow, "--timeout-ms", DRIVE_TIMEOUT_MS])
        .args([
            "--mode",
            match mode {
                Mode::Legacy => "legacy",
                Mode::Pinned => "pinned",
            },
        ]);
    sdk_clients::drive(cmd, transport, component)
}

/// The methods of the input requests the client's handlers answered.
fn input_methods(run: &Value) -> Vec<&str> {
    run["inputs"]
        .as_array()
        .expect("inputs")
        .iter()
        .map(|i| i["method"].as_str().expect("an input's method"))
        .collect()
}

/// How many messages the client sent that `describe` as `what`.
fn count_sent(run: &Value, what: &str) -> usize {
    let sent = run["sent"].as_array().expect("sent");
    sent.iter().filter(|m| m.as_str() == Some(what)).count()
}

/// The text blocks of the tool result, after checking it is not an error.
fn texts(run: &Value) -> Vec<&str> {
    let result = &run["result"];
    assert_ne!(result["isError"], true, "an error result: {result}");
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|c| {
            assert_eq!(c["type"], "text", "a text block: {c}");
            c["text"].as_str().expect("text")
        })
        .collect()
}

/// Checks that the run spoke `mode`'s protocol: the negotiated version, and
/// how input travelled (server requests answered in one call for legacy;
/// one `tools/call` per round, and no handshake or session, for pinned).
fn assert_mode(run: &Value, mode: Mode, transport: Transport) {
    let inputs = input_methods(run).len();
    assert!(inputs > 0, "every flow asks for input: {run}");
    let http: Vec<&str> = run["http"]
        .as_array()
        .expect("http")
        .iter()
        .map(|h| h.as_str().expect("an exchange"))
        .collect();
    match mode {
        Mode::Legacy => {
            assert_eq!(run["protocolVersion"], LEGACY_REVISION, "{run}");
            assert_eq!(run["era"], "legacy", "{run}");
            assert_eq!(run["sent"][0], "initialize", "{run}");
            assert_eq!(count_sent(run, "notifications/initialized"), 1, "{run}");
            assert_eq!(count_sent(run, "tools/call"), 1, "one call: {run}");
            assert_eq!(
                count_sent(run, "response"),
                inputs,
                "one response per server request: {run}"
            );
            if let Transport::Http = transport {
                assert!(
                    http[0].starts_with("POST initialize 200"),
                    "the session starts with initialize: {http:?}"
                );
            }
        }
        Mode::Pinned => {
            assert_eq!(run["protocolVersion"], PINNED_REVISION, "{run}");
            assert_eq!(run["era"], "modern", "{run}");
            assert_eq!(count_sent(run, "initialize"), 0, "no handshake: {run}");
            assert_eq!(count_sent(run, "response"), 0, "no server requests: {run}");
            assert_eq!(
                count_sent(run, "tools/call"),
                inputs + 1,
                "one call per round, each round asking one thing: {run}"
            );
            assert!(
                http.iter().all(|h| h.starts_with("POST ")),
                "stateless: no GET stream and no DELETE: {http:?}"
            );
        }
    }
}

/// `update_work_item`: two forms (Resolution, then Duplicate Of), both
/// answers in the summary and the structured content.
fn check_work_items(run: &Value, mode: Mode, transport: Transport) {
    assert_mode(run, mode, transport);
    assert_eq!(
        input_methods(run),
        ["elicitation/create", "elicitation/create"]
    );
    let asked = &run["inputs"];
    assert_eq!(
        asked[0]["params"]["message"],
        "Work item 42 is being resolved. What is the resolution?"
    );
    assert!(asked[0]["params"]["requestedSchema"]["properties"]["resolution"].is_object());
    assert_eq!(
        asked[1]["params"]["message"],
        "Work item 42 is a duplicate. Of which work item?"
    );
    assert_eq!(
        texts(run),
        [format!(
            "Updated work item 42: State = Resolved, Resolution = Duplicate, Duplicate Of = {DUPLICATE_OF}"
        )]
    );
    assert_eq!(
        run["result"]["structuredContent"],
        json!({
            "workItemId": 42,
            "fields": {"State": "Resolved", "Resolution": "Duplicate", "Duplicate Of": DUPLICATE_OF}
        })
    );
}

/// `deploy` to production: one confirmation form, accepted.
fn check_deploy(run: &Value, mode: Mode, transport: Transport) {
    assert_mode(run, mode, transport);
    assert_eq!(input_methods(run), ["elicitation/create"]);
    assert_eq!(
        run["inputs"][0]["params"]["message"],
        "Deploy billing to production?"
    );
    assert_eq!(texts(run), ["Deployed billing to production"]);
}

/// `summarize`: one sampling request carrying the text; the sampled text and
/// model name come back.
fn check_summarize(run: &Value, mode: Mode, transport: Transport) {
    assert_mode(run, mode, transport);
    assert_eq!(input_methods(run), ["sampling/createMessage"]);
    let asked = &run["inputs"][0]["params"];
    assert_eq!(asked["maxTokens"], 200);
    let prompt = asked["messages"][0]["content"]["text"]
        .as_str()
        .unwrap_or_default();
    assert!(
        prompt.contains("WebAssembly components, safely and statelessly."),
        "the text reached the model: {asked}"
    );
    // The driver's answer counts the words it was given (3 + 11).
    let summary = "Summary from the TypeScript client (14 words in).";
    assert_eq!(
        texts(run),
        [summary.to_owned(), format!("(Summary written by {MODEL}.)")]
    );
    assert_eq!(
        run["result"]["structuredContent"],
        json!({"summary": summary, "model": MODEL})
    );
}

/// `list_roots`: one roots request; the roots the client gave, listed.
fn check_workspace(run: &Value, mode: Mode, transport: Transport) {
    assert_mode(run, mode, transport);
    assert_eq!(input_methods(run), ["roots/list"]);
    let ((app, app_name), notes) = (APP_ROOT, NOTES_ROOT);
    assert_eq!(
        texts(run),
        [format!(
            "The client exposes 2 roots:\n- {app_name}: {app}\n- {notes}"
        )]
    );
    assert_eq!(
        run["result"]["structuredContent"],
        json!({"roots": [{"uri": app, "name": app_name}, {"uri": notes}]})
    );
}

/// Defines module `$module` with one test per flow, run over `$transport`
/// in `$mode`.
macro_rules! flow_tests {
    ($($module:ident: $transport:expr, $mode:expr;)*) => {$(
        mod $module {
            use super::*;

            #[test]
            fn work_items() {
                let run = drive($transport, $mode, "work-items", "work_items");
                check_work_items(&run, $mode, $transport);
            }

            #[test]
            fn deploy() {
                let run = drive($transport, $mode, "deploy", "deploy");
                check_deploy(&run, $mode, $transport);
            }

            #[test]
            fn summarize() {
                let run = drive($transport, $mode, "summarize", "summarize");
                check_summarize(&run, $mode, $transport);
            }

            #[test]
            fn workspace() {
                let run = drive($transport, $mode, "workspace", "workspace");
                check_workspace(&run, $mode, $transport);
            }
        }
    )*};
}

flow_tests! {
    http_pinned: Transport::Http, Mode::Pinned;
    http_legacy: Transport::Http, Mode::Legacy;
    stdio_pinned: Transport::Stdio, Mode::Pinned;
    stdio_legacy: Transport::Stdio, Mode::Legacy;
}
