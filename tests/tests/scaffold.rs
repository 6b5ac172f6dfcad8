//! The tool author's path: `airlock new` outside the repository, with no
//! checkout named (the crate gets the SDK the binary carries), the new
//! crate's unit tests, its build with plain cargo, offline, and with
//! cargo-component (`scripts/cargo-component` installs it on first use,
//! which takes minutes), and each build served by the real binary and
//! called over HTTP.

use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::mcp::{complete, text};
use airlock_e2e::paths::{target_dir, workspace_root};
use airlock_e2e::{Airlock, McpClient, ToolCall, ToolsDir, run_airlock};
use serde_json::json;

/// The crate (and tool) the test creates.
const NAME: &str = "greeter-e2e";

/// Its component's file name.
const WASM: &str = "greeter_e2e.wasm";

/// Runs `command`; panics with its output if it fails.
#[track_caller]
fn run(mut command: Command) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("run {command:?}: {e}"));
    assert!(
        out.status.success(),
        "{command:?} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `program` in the new crate's directory, building into `target`.
fn in_crate(program: impl AsRef<std::ffi::OsStr>, dir: &Path, target: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir).env("CARGO_TARGET_DIR", target);
    command
}

/// Serves `component` and checks what it lists, what `inspect` says it
/// exports, and a call of its tool.
#[track_caller]
fn serve_and_call(component: &Path) {
    let bytes =
        std::fs::read(component).unwrap_or_else(|e| panic!("read {}: {e}", component.display()));
    let tools = ToolsDir::new();
    tools.add_bytes(WASM, &bytes);

    let file = tools.path().join(WASM);
    let (status, report, stderr) = run_airlock(&["inspect", file.to_str().unwrap()]);
    assert!(status.success(), "{status}: {stderr}");
    assert!(report.lines().any(|l| l == "exports: tools"), "{report}");

    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    let listed = client.list_all("tools/list", "tools");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], NAME);
    // Derived from the argument type by the SDK's `schemars` feature.
    assert_eq!(
        listed[0]["inputSchema"],
        json!({
            "type": "object",
            "properties": { "name": { "type": "string", "description": "Whom to greet." } },
            "required": ["name"]
        })
    );
    let response = client.call(&ToolCall::new(NAME, json!({ "name": "Ada" })));
    assert_eq!(text(complete(&response)), "Hello, Ada!", "{response}");
    let response = client.call(&ToolCall::new(NAME, json!({ "name": " " })));
    let result = complete(&response);
    assert_eq!(result["isError"], true, "{response}");
    assert_eq!(text(result), "give a name to greet");
}

#[test]
fn a_new_tool_builds_with_cargo_and_cargo_component_and_serves() {
    let parent = tempfile::Builder::new()
        .prefix("airlock-new-")
        .tempdir()
        .expect("a temporary directory");
    let root = workspace_root();
    // No checkout named: the SDK comes from the binary alone.
    let (status, stdout, stderr) =
        run_airlock(&["new", NAME, "--dir", parent.path().to_str().unwrap()]);
    assert!(status.success(), "{status}: {stdout}{stderr}");
    let dir = parent.path().join(NAME);
    let said = dir.join("target/wasm32-wasip2/release").join(WASM);
    assert!(
        stdout.contains("`cargo build --release`") && stdout.contains(said.to_str().unwrap()),
        "it says how to build and where the component lands: {stdout}"
    );
    assert!(dir.join("Cargo.toml").is_file(), "{stdout}");
    assert!(
        dir.join("vendor/airlock-guest/Cargo.toml").is_file(),
        "{stdout}"
    );

    // The workspace's versions of every dependency: what the SDK is tested
    // with, all in the cargo home's registry cache already, so the builds
    // below run offline.
    std::fs::copy(root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("copy Cargo.lock");
    // Kept between runs, beside the workspace's own builds.
    let target: PathBuf = target_dir().join("scaffold-e2e");

    let mut tests = in_crate("cargo", &dir, &target);
    tests.args(["test", "--offline", "--target", "host-tuple"]);
    run(tests);

    // Each build's file where the crate's README says it is (none left
    // from an earlier run: the target directory is kept).
    let [plain_file, component_file] = documented_files(&dir, &target);
    for file in [&plain_file, &component_file] {
        let _ = std::fs::remove_file(file);
    }

    // No `--target`: the crate's default is wasm32-wasip2.
    let mut plain = in_crate("cargo", &dir, &target);
    plain.args(["build", "--offline", "--release"]);
    run(plain);
    serve_and_call(&plain_file);

    let mut component = in_crate("bash", &dir, &target);
    component
        .arg(root.join("scripts/cargo-component"))
        .args(["build", "--release"]);
    run(component);
    serve_and_call(&component_file);
}

/// The files the new crate's README names as the outputs of its two builds
/// (`# → target/...` under plain cargo's command, then cargo-component's),
/// in `target` (the builds' target directory).
fn documented_files(dir: &Path, target: &Path) -> [PathBuf; 2] {
    let readme = std::fs::read_to_string(dir.join("README.md")).expect("the crate's README");
    let files: Vec<PathBuf> = readme
        .lines()
        .filter_map(|line| line.strip_prefix("# → target/"))
        .map(|path| target.join(path))
        .collect();
    files
        .try_into()
        .unwrap_or_else(|files| panic!("two outputs in the README, not {files:?}:\n{readme}"))
}
