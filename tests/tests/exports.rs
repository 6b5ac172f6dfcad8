//! A component exports the interfaces its `export!` names and nothing else,
//! so `airlock inspect` tells a tools-only component from one that also
//! serves prompts, resources or completions; every interface it names is
//! served.

use airlock_e2e::everything::completion_params;
use airlock_e2e::mcp::complete;
use airlock_e2e::{Airlock, McpClient, ToolsDir, run_airlock};
use serde_json::json;

/// The `exports: ...` line of `airlock inspect` on component `name`.
#[track_caller]
fn exports_line(name: &str) -> String {
    let tools = ToolsDir::with(&[name]);
    let file = tools
        .path()
        .join(format!("{}.wasm", name.replace('-', "_")));
    let (status, report, stderr) = run_airlock(&["inspect", file.to_str().unwrap()]);
    assert!(status.success(), "{status}: {stderr}");
    report
        .lines()
        .find(|line| line.starts_with("exports: "))
        .unwrap_or_else(|| panic!("no exports line in {report}"))
        .to_owned()
}

#[test]
fn a_tools_only_component_exports_only_tools() {
    assert_eq!(exports_line("hash"), "exports: tools");
    assert_eq!(exports_line("deploy"), "exports: tools");
}

#[test]
fn tools_and_resources_are_exported_and_served() {
    assert_eq!(exports_line("watcher"), "exports: tools, resources");
    let tools = ToolsDir::with(&["watcher"]);
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    assert!(!client.tool_names().is_empty());
    assert!(!client.list_all("resources/list", "resources").is_empty());
}

#[test]
fn all_four_interfaces_are_exported_and_served() {
    assert_eq!(
        exports_line("everything"),
        "exports: tools, prompts, resources, completions"
    );
    let tools = ToolsDir::with(&["everything"]);
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    assert!(!client.tool_names().is_empty());
    assert!(!client.list_all("prompts/list", "prompts").is_empty());
    assert!(!client.list_all("resources/list", "resources").is_empty());
    // A component without the completions export completes nothing.
    let params = completion_params(
        json!({ "type": "ref/prompt", "name": "test_prompt_with_arguments" }),
        "arg1",
        "test-",
    );
    let response = client.exchange("completion/complete", params).response;
    assert_eq!(
        complete(&response)["completion"]["values"],
        json!(["test-alpha", "test-beta"]),
        "{response}"
    );
}
