//! The README as a newcomer's first page: its Quick start is two commands
//! on a fresh machine, one that serves the samples and the full test suite;
//! the first installs the `airlock` binary that the stdio recipe runs, and
//! that recipe, run as written on a tools directory of the samples, serves
//! them to a client that lists them at once.

use std::path::Path;
use std::time::Duration;

use airlock_e2e::mcp::{complete, no_caps, request, with_meta};
use airlock_e2e::paths::workspace_root;
use airlock_e2e::{SAMPLE_TOOLS, SAMPLES, ToolsDir, run_airlock_with_input};
use serde_json::{Value, json};

/// The text of the file at `path` in the workspace.
fn read(path: &str) -> String {
    std::fs::read_to_string(workspace_root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The lines of the first ```` ```kind ```` block after `after` in `text`.
fn block<'t>(text: &'t str, after: &str, kind: &str) -> Vec<&'t str> {
    let start = text
        .find(after)
        .unwrap_or_else(|| panic!("the README has no {after:?}"));
    text[start..]
        .lines()
        .skip_while(|line| *line != format!("```{kind}"))
        .skip(1)
        .take_while(|line| *line != "```")
        .collect()
}

/// The commands of shell `lines`: without comments and blank lines.
fn commands<'t>(lines: impl IntoIterator<Item = &'t str>) -> Vec<&'t str> {
    lines
        .into_iter()
        .map(|line| line.split('#').next().unwrap_or_default().trim())
        .filter(|command| !command.is_empty())
        .collect()
}

#[test]
fn the_quick_start_installs_what_the_stdio_recipe_runs_and_the_recipe_serves_the_samples() {
    let readme = read("README.md");
    let quick_start = block(&readme, "## Quick start", "sh");
    assert_eq!(
        commands(quick_start.iter().copied()),
        ["scripts/serve-samples", "scripts/test"],
        "two commands on a fresh machine"
    );
    assert!(
        quick_start
            .iter()
            .any(|line| line.starts_with("scripts/test") && line.contains("full test suite")),
        "{quick_start:?}"
    );

    // The first installs the binary the recipe names, then serves with it.
    let script = read("scripts/serve-samples");
    let steps = commands(script.lines());
    assert!(
        steps.contains(&"cargo install --locked --path host >&2"),
        "scripts/serve-samples does not install airlock: {steps:?}"
    );
    assert!(
        steps
            .iter()
            .any(|step| step.starts_with("exec \"$airlock\" serve --tools ./tools")),
        "scripts/serve-samples does not serve with what it installed: {steps:?}"
    );
    let host = read("host/Cargo.toml");
    assert_eq!(
        host.matches("[[bin]]").count(),
        1,
        "the host package installs one binary"
    );
    assert!(
        host.contains("[[bin]]\nname = \"airlock\"\n"),
        "named airlock"
    );
    let recipe: Value = serde_json::from_str(&block(&readme, "**stdio**", "json").join("\n"))
        .expect("the stdio recipe is JSON");
    let server = &recipe["mcpServers"]["airlock"];
    assert_eq!(server["command"], "airlock", "{recipe}");

    // Its arguments as written, on the samples, with the `tools` directory
    // the script fills; a client that lists right away sees them all.
    let tools = ToolsDir::with(SAMPLES);
    let written: Vec<&str> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|arg| arg.as_str().expect("a string argument"))
        .collect();
    let tools_dir = written
        .iter()
        .position(|arg| *arg == "--tools")
        .map(|at| written[at + 1])
        .expect("the recipe names the tools directory");
    assert_eq!(Path::new(tools_dir).file_name(), Some("tools".as_ref()));
    let path = tools.path().to_str().expect("a UTF-8 temporary path");
    let args: Vec<&str> = written
        .iter()
        .map(|arg| if *arg == tools_dir { path } else { arg })
        .collect();
    let cache = tempfile::tempdir().expect("a cache directory");
    let list = request(json!(1), "tools/list", with_meta(json!({}), no_caps()));
    let (status, stdout, stderr) = run_airlock_with_input(
        &args,
        &[("XDG_CACHE_HOME", cache.path())],
        format!("{list}\n").as_bytes(),
        Duration::from_secs(180),
    );
    assert!(status.success(), "{status}: {stderr}");
    let reply: Value = serde_json::from_str(stdout.lines().next().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    let mut listed: Vec<&str> = complete(&reply)["tools"]
        .as_array()
        .expect("a tools array")
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default())
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, SAMPLE_TOOLS, "{stderr}");
}
