//! Helpers for the tests that run the `hostile` test guest: a tools
//! directory with it (and the `hash` sample as a well-behaved bystander),
//! its manifest, and assertions on what a hostile call got.

use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp::{complete, is_error, text};
use crate::paths::target_dir;
use crate::{Airlock, HttpServer, McpClient, ToolCall, ToolsDir};

/// How often servers that see manifests change look at the tools directory.
pub const RELOAD_INTERVAL: &str = "50ms";

/// SHA-256 of `abc`.
pub const SHA256_ABC: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

/// Generous bound for "the call was answered" (liveness, not speed).
pub const ANSWERED_WITHIN: Duration = Duration::from_secs(30);

/// A tools directory with `hostile` and `hash`, and `hostile.toml` if
/// `manifest` is given.
pub fn tools_with(manifest: Option<&str>) -> ToolsDir {
    let tools = ToolsDir::with(&["hostile", "hash"]);
    if let Some(text) = manifest {
        tools.add_bytes("hostile.toml", text.as_bytes());
    }
    tools
}

/// `airlock serve` on `tools`, polling for changes every 50 ms, with a
/// compile cache shared by every test (under the target directory, keyed
/// by the component's and the engine's hashes), so each server does not
/// recompile the same two components.
pub fn airlock(tools: &ToolsDir) -> Airlock {
    Airlock::new(tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(target_dir().join("airlock-e2e-hostile-cache"))
        .args(["--reload-interval", RELOAD_INTERVAL])
}

/// A server on `tools` with `args`.
pub fn serve(tools: &ToolsDir, args: &[&str]) -> HttpServer {
    airlock(tools).args(args).start_http()
}

/// A path as a TOML literal string.
pub fn toml_path(path: &Path) -> String {
    let text = path.to_str().expect("a UTF-8 temporary path");
    assert!(
        !text.contains('\''),
        "cannot quote {text} as a TOML literal"
    );
    format!("'{text}'")
}

/// Calls tool `name` with `args`.
pub fn call(client: &dyn McpClient, name: &str, args: Value) -> Value {
    client.call(&ToolCall::new(name, args))
}

/// The text of a successful (not `isError`) complete result.
#[track_caller]
pub fn answer(response: &Value) -> String {
    let result = complete(response);
    assert!(
        !is_error(result),
        "expected a successful result: {response}"
    );
    text(result)
}

/// Asserts the tool ran and reported success: its text is `ok: <expected>`.
#[track_caller]
pub fn assert_ok(response: &Value, expected: &str) {
    assert_eq!(answer(response), format!("ok: {expected}"), "{response}");
}

/// Asserts the tool ran and reported a refusal (`error: …`); returns the
/// text. Hostile reports what it met as text, so an `isError` result here
/// means the host failed the call instead, which is wrong for a refusal.
#[track_caller]
pub fn assert_refused(response: &Value, what: &str) -> String {
    let said = answer(response);
    assert!(
        said.starts_with("error: "),
        "{what} must be refused, the tool saw: {said}"
    );
    said
}

/// Asserts the host failed the call with `isError` and a text naming the
/// limit: every one of `words`, case-insensitively.
#[track_caller]
pub fn assert_limit(response: &Value, words: &[&str]) -> String {
    let result = complete(response);
    assert!(is_error(result), "expected an isError result: {response}");
    let said = text(result);
    let lower = said.to_ascii_lowercase();
    for word in words {
        assert!(
            lower.contains(&word.to_ascii_lowercase()),
            "the error should say {word:?}: {said}"
        );
    }
    said
}

/// `sha256` of the `hash` sample still answers correctly.
#[track_caller]
pub fn assert_sha256_works(client: &dyn McpClient) {
    let response = call(client, "sha256", json!({"text": "abc"}));
    assert_eq!(answer(&response).trim(), SHA256_ABC, "{response}");
}
