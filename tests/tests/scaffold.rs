//! The tool author's path: `airlock new` outside the repository, with no
//! checkout named (the crate gets the SDK the binary carries), the new
//! crate's unit tests, its build with plain cargo, offline, and with
//! cargo-component (`scripts/cargo-component` installs it on first use,
//! which takes minutes), and each build served by the real binary and
//! called over HTTP. The same for a Python and a JavaScript project: built
//! by the command `airlock new` prints, run where it was created with an
//! environment that names nothing in the repository (the project carries
//! its build script, SDK and WIT), with the toolchains the rest of the suite
//! installs into the user's cache.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use airlock_e2e::language_tools::{COMPILE_TIMEOUT, JAVASCRIPT, LanguageTools, PYTHON};
use airlock_e2e::mcp::{complete, text};
use airlock_e2e::paths::{target_dir, workspace_root};
use airlock_e2e::{Airlock, McpClient, ToolCall, ToolsDir, run_airlock, run_airlock_within};
use serde_json::json;

/// The crate (and tool) the test creates.
const NAME: &str = "greeter-e2e";

/// Its component's file name.
const WASM: &str = "greeter_e2e.wasm";

/// Runs `command`; panics with its output if it fails, else returns its
/// standard error.
#[track_caller]
fn run(mut command: Command) -> String {
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
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// `program` in the new crate's directory, building into `target`.
fn in_crate(program: impl AsRef<std::ffi::OsStr>, dir: &Path, target: &Path) -> Command {
    let mut command = Command::new(program);
    command.current_dir(dir).env("CARGO_TARGET_DIR", target);
    command
}

/// Serves `component` as `file_name` with the server `serve` makes of its
/// tools directory, and checks what it lists, what `inspect` says it
/// exports, and a call of its tool.
#[track_caller]
fn serve_and_call(component: &Path, file_name: &str, serve: impl Fn(&ToolsDir) -> Airlock) {
    let bytes =
        std::fs::read(component).unwrap_or_else(|e| panic!("read {}: {e}", component.display()));
    let tools = ToolsDir::new();
    tools.add_bytes(file_name, &bytes);

    let file = tools.path().join(file_name);
    // A large component compiles here.
    let (status, report, stderr) =
        run_airlock_within(&["inspect", file.to_str().unwrap()], COMPILE_TIMEOUT);
    assert!(status.success(), "{status}: {stderr}");
    assert!(report.lines().any(|l| l == "exports: tools"), "{report}");

    let server = serve(&tools).start_http();
    let client = server.client();
    let listed = client.list_all("tools/list", "tools");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["name"], NAME);
    // In Rust, derived from the argument type by the SDK's `schemars` feature.
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
    serve_and_call(&plain_file, WASM, Airlock::new);

    let mut component = in_crate("bash", &dir, &target);
    component
        .arg(root.join("scripts/cargo-component"))
        .args(["build", "--release"]);
    run(component);
    serve_and_call(&component_file, WASM, Airlock::new);
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

#[test]
fn a_new_python_tool_builds_outside_the_repository_and_serves() {
    new_project_builds_outside_the_repository_and_serves("python", &PYTHON);
}

#[test]
fn a_new_javascript_tool_builds_outside_the_repository_and_serves() {
    new_project_builds_outside_the_repository_and_serves("javascript", &JAVASCRIPT);
}

/// `airlock new NAME --language LANGUAGE` in a temporary directory, the
/// build command it prints run there with [`outside_env`], twice (the second
/// finds the component up to date, though it lies in the project it was
/// built from), and the component served (with the compile cache of
/// `tools`' servers) and called.
fn new_project_builds_outside_the_repository_and_serves(language: &str, tools: &LanguageTools) {
    let parent = tempfile::Builder::new()
        .prefix("airlock-new-")
        .tempdir()
        .expect("a temporary directory");
    let (status, stdout, stderr) = run_airlock(&[
        "new",
        NAME,
        "--language",
        language,
        "--dir",
        parent.path().to_str().unwrap(),
    ]);
    assert!(status.success(), "{status}: {stdout}{stderr}");
    let dir = parent.path().join(NAME);
    assert!(
        !dir.starts_with(workspace_root()),
        "{} is outside the repository",
        dir.display()
    );
    let file_name = format!("{NAME}.wasm");
    let said = dir.join(&file_name);
    assert!(
        stdout.contains(said.to_str().unwrap()),
        "it says where the component lands: {stdout}"
    );
    let build = stdout
        .split_once("build it with `")
        .and_then(|(_, rest)| rest.split_once('`'))
        .map(|(command, _)| command.split_whitespace().collect::<Vec<_>>())
        .unwrap_or_else(|| panic!("it says how to build: {stdout}"));
    let (program, args) = build.split_first().expect("a build command");

    let env = outside_env();
    let build = || {
        let mut command = Command::new(dir.join(program));
        command
            .args(args)
            .current_dir(&dir)
            .env_clear()
            .envs(env.iter().cloned());
        run(command)
    };
    let first = build();
    assert!(said.is_file(), "no {}: {first}", said.display());
    let again = build();
    assert!(
        again.contains(&format!("{file_name} is up to date")),
        "its own output is no input of the next build: {again}"
    );

    serve_and_call(&said, &file_name, |dir| {
        tools.server_on(dir).start_within(COMPILE_TIMEOUT)
    });
}

/// This process's environment without what names the repository: variables
/// whose value contains its path (cargo's `CARGO_MANIFEST_DIR` ...) are left
/// out, and so are such directories of `PATH`. `HOME` and `XDG_CACHE_HOME`
/// stay, so the build finds the toolchains the rest of the suite installed.
fn outside_env() -> Vec<(OsString, OsString)> {
    let root = workspace_root();
    let root = root.canonicalize().unwrap_or(root);
    let inside = |path: &Path| {
        path.starts_with(&root)
            || path
                .canonicalize()
                .is_ok_and(|path| path.starts_with(&root))
    };
    std::env::vars_os()
        .filter_map(|(key, value)| {
            if key == "PATH" {
                let dirs = std::env::split_paths(&value).filter(|dir| !inside(dir));
                return Some((key, std::env::join_paths(dirs).expect("a PATH")));
            }
            let names_root = value
                .to_str()
                .is_some_and(|value| value.contains(root.to_str().unwrap()));
            (!names_root).then_some((key, value))
        })
        .collect()
}
