//! MCP Apps (`io.modelcontextprotocol/ui`) against the real binary: the
//! `chart` sample's tools name their App in `_meta.ui` and its `ui://`
//! resource is listed and read with the App MIME type and its own `_meta.ui`,
//! on the 2026-07-28 wire and in a 2025 session, beside its skill; the extension is declared
//! only while an App is served; a `_meta` that is not an object, or too
//! large, is refused like any other bad output (the `app-meta` test guest,
//! stamped with other listed `_meta`);
//! access rules hide an App from a caller who may not read it.

use airlock_e2e::legacy::{Endpoint, legacy_caps};
use airlock_e2e::mcp::{ToolCall, complete, no_caps, text};
use airlock_e2e::paths::component;
use airlock_e2e::stamp::replace_once;
use airlock_e2e::{Airlock, McpClient, ToolsDir, wait_until};
use serde_json::{Value, json};

const EXTENSION: &str = "io.modelcontextprotocol/ui";
const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";
const CHART_APP: &str = "ui://chart/bar-chart.html";
const TEST_APP: &str = "ui://app-meta/app.html";

/// The `_meta` both chart tools carry, and `sort_numbers`' visibility.
fn chart_tool_metas() -> [(&'static str, Value); 2] {
    [
        ("chart_numbers", json!({"ui": {"resourceUri": CHART_APP}})),
        (
            "sort_numbers",
            json!({"ui": {"resourceUri": CHART_APP, "visibility": ["model", "app"]}}),
        ),
    ]
}

/// The item of `items` whose `key` is `value`.
#[track_caller]
fn item<'a>(items: &'a [Value], key: &str, value: &str) -> &'a Value {
    items
        .iter()
        .find(|item| item[key] == value)
        .unwrap_or_else(|| panic!("no item with {key} {value} in {items:?}"))
}

/// Checks the chart's tools, resource and read as one revision lists and
/// reads them.
#[track_caller]
fn assert_chart_on_the_wire(tools: &[Value], resources: &[Value], read: &Value) {
    for (name, meta) in chart_tool_metas() {
        assert_eq!(item(tools, "name", name)["_meta"], meta, "{name}");
    }
    assert!(
        item(tools, "name", "sha256").get("_meta").is_none(),
        "a tool without meta has no _meta: {tools:?}"
    );
    let listed = item(resources, "uri", CHART_APP);
    assert_eq!(listed["name"], "bar-chart");
    assert_eq!(listed["mimeType"], APP_MIME_TYPE);
    let contents = read["contents"].as_array().expect("contents");
    assert_eq!(contents.len(), 1, "{read}");
    assert_eq!(contents[0]["uri"], CHART_APP);
    assert_eq!(contents[0]["mimeType"], APP_MIME_TYPE);
    assert!(
        contents[0]["text"]
            .as_str()
            .is_some_and(|html| html.contains("<html")),
        "{read}"
    );
    assert_eq!(
        contents[0]["_meta"],
        json!({"ui": {"prefersBorder": true, "csp": {}}})
    );
}

/// `server/discover`'s extensions (null when none).
fn extensions(client: &dyn McpClient) -> Value {
    complete(&client.rpc("server/discover", json!({}), no_caps()))["capabilities"]["extensions"]
        .clone()
}

/// The tool's listed `_meta` in the `app-meta` test guest, which copies
/// replace.
const LISTED_META: &[u8] = include_bytes!("../guests/app-meta/src/listed-meta.json");

/// A tools directory with `hash` and the `app-meta` test guest, whose
/// manifest is `manifest`.
fn app_meta_tools(manifest: &str) -> ToolsDir {
    let tools = ToolsDir::with(&["hash", "app-meta"]);
    tools.add_bytes("app_meta.toml", manifest.as_bytes());
    tools
}

/// A manifest giving the `app-meta` guest `variable` = `value`.
fn env_manifest(variable: &str, value: &str) -> String {
    format!("[env]\n{variable} = {{ value = {} }}\n", json!(value))
}

/// `_meta` of about `bytes` bytes: an object with one long string.
fn large_meta(bytes: usize) -> String {
    json!({"ui": {"padding": "x".repeat(bytes)}}).to_string()
}

#[test]
fn the_chart_app_is_on_the_wire_of_both_revisions() {
    let tools = ToolsDir::with(&["chart", "hash"]);
    // The sample's skill, shipped beside it as scripts/serve-samples does.
    tools.add_bytes(
        "chart.skills/charting-numbers/SKILL.md",
        include_bytes!("../../sample-tools/chart/chart.skills/charting-numbers/SKILL.md"),
    );
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    let skills = complete(&client.rpc("skills/list", json!({}), no_caps()))["skills"].clone();
    let skills = skills.as_array().expect("skills");
    let skill = item(skills, "uri", "skill://charting-numbers/SKILL.md");
    assert!(
        skill["frontmatter"]["description"]
            .as_str()
            .is_some_and(|d| d.contains("chart_numbers")),
        "{skill}"
    );
    let read = client.rpc("resources/read", json!({"uri": CHART_APP}), no_caps());
    assert_chart_on_the_wire(
        &client.list_all("tools/list", "tools"),
        &client.list_all("resources/list", "resources"),
        complete(&read),
    );
    let called = client.call(&ToolCall::new(
        "chart_numbers",
        json!({"title": "Sales", "values": [5, 17, 12.5, 7.5]}),
    ));
    let called = complete(&called);
    assert_eq!(text(called), "Sales: 4 values, total 42, max 17");
    assert_eq!(
        called["structuredContent"],
        json!({"title": "Sales", "values": [5, 17, 12.5, 7.5]})
    );

    let session = Endpoint::new(server.url()).open(legacy_caps());
    let tools = session.result("tools/list", json!({}));
    let resources = session.result("resources/list", json!({}));
    let read = session.result("resources/read", json!({"uri": CHART_APP}));
    assert_chart_on_the_wire(
        tools["tools"].as_array().expect("tools"),
        resources["resources"].as_array().expect("resources"),
        &read,
    );
}

#[test]
fn the_extension_is_declared_only_while_an_app_is_served() {
    let tools = ToolsDir::with(&["hash"]);
    let server = Airlock::new(&tools)
        .args(["--reload-interval", "50ms"])
        .start_http();
    let client = server.client();
    assert!(
        extensions(&client).get(EXTENSION).is_none(),
        "no App, no extension: {}",
        extensions(&client)
    );
    tools.publish_as("chart", "chart.wasm");
    let declared = wait_until("the Apps extension declared", || {
        let extensions = extensions(&client);
        extensions
            .get(EXTENSION)
            .cloned()
            .ok_or_else(|| extensions.to_string())
    });
    assert_eq!(declared, json!({"mimeTypes": [APP_MIME_TYPE]}));
    tools.remove("chart.wasm");
    wait_until("the Apps extension withdrawn", || {
        let extensions = extensions(&client);
        match extensions.get(EXTENSION) {
            None => Ok(()),
            Some(_) => Err(extensions.to_string()),
        }
    });
}

#[test]
fn a_listed_meta_that_is_not_an_object_keeps_the_component_out() {
    let guest = std::fs::read(component("app-meta")).expect("read the app-meta component");
    let inner = LISTED_META.len() - 2;
    let string = format!("\"{}\"", "x".repeat(inner));
    let array = format!("[{}]", " ".repeat(inner));
    let broken = format!("{{{}", " ".repeat(inner + 1));
    for bad in [string, array, broken] {
        let tools = ToolsDir::with(&["hash"]);
        tools.add_bytes(
            "app_meta.wasm",
            &replace_once(&guest, LISTED_META, bad.as_bytes()),
        );
        let server = Airlock::new(&tools).start_http();
        let line = server.wait_for_log_lines(&["skipping component", "app_meta.wasm"], 1);
        assert!(line.contains("tool `show`: _meta"), "{bad}: {line}");
        let client = server.client();
        assert_eq!(client.tool_names(), ["sha256"], "{bad}");
        assert!(extensions(&client).get(EXTENSION).is_none(), "{bad}");
    }
}

#[test]
fn a_listed_meta_over_the_output_limit_keeps_the_component_out() {
    let tools = ToolsDir::with(&["hash", "app-meta"]);
    // The guest lists 2 KiB of `_meta`; a page may hold 1 KiB.
    let server = Airlock::new(&tools)
        .args(["--max-output", "1KiB"])
        .start_http();
    let line = server.wait_for_log_lines(&["skipping component", "app_meta.wasm"], 1);
    assert!(line.contains("--max-output"), "{line}");
    assert_eq!(server.client().tool_names(), ["sha256"]);
    // The default limit has room for it.
    let server = Airlock::new(&tools).start_http();
    assert_eq!(server.client().tool_names(), ["sha256", "show"]);
}

#[test]
fn a_read_meta_that_is_not_an_object_or_too_large_fails_the_read() {
    let read = |manifest: &str| {
        let server = Airlock::new(&app_meta_tools(manifest)).start_http();
        let client = server.client();
        assert_eq!(client.tool_names(), ["sha256", "show"], "listed fine");
        client.rpc("resources/read", json!({"uri": TEST_APP}), no_caps())
    };
    let assert_failed = |response: &Value, words: &[&str]| {
        assert_eq!(response["error"]["code"], -32603, "{response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        for word in words {
            assert!(message.contains(word), "{word:?} missing: {response}");
        }
    };

    let fine = read("");
    assert_eq!(complete(&fine)["contents"][0]["_meta"], json!({"ui": {}}));
    let not_object = read(&env_manifest("READ_META", "[\"ui\"]"));
    assert_failed(&not_object, &[TEST_APP, "_meta must be a JSON object"]);
    let large = format!(
        "[limits]\nmax-output = \"4KiB\"\n{}",
        env_manifest("READ_META", &large_meta(8 << 10))
    );
    assert_failed(&read(&large), &[TEST_APP, "4 KiB output limit"]);
}

#[test]
fn an_app_the_caller_may_not_read_is_not_listed() {
    let tools = ToolsDir::with(&["chart", "hash"]);
    tools.add_bytes(
        "chart.toml",
        format!("[resources.\"{CHART_APP}\"]\nallow = [\"group:viewers\"]\n").as_bytes(),
    );
    let files = tempfile::tempdir().expect("a temporary directory");
    let tokens = files.path().join("tokens");
    std::fs::write(
        &tokens,
        "plain-token-0123456789 plain\nviewer-token-0123456789 viewer group:viewers\n",
    )
    .expect("write the tokens file");
    let server = Airlock::new(&tools)
        .args(["--tokens-file", tokens.to_str().expect("a UTF-8 path")])
        .start_http();
    let uris = |client: &dyn McpClient| -> Vec<Value> {
        let resources = client.list_all("resources/list", "resources");
        resources.iter().map(|r| r["uri"].clone()).collect()
    };

    let plain = server.client_with_token("plain-token-0123456789");
    assert!(
        !uris(&plain).contains(&json!(CHART_APP)),
        "{:?}",
        uris(&plain)
    );
    let read = plain.rpc("resources/read", json!({"uri": CHART_APP}), no_caps());
    assert!(read.get("error").is_some(), "{read}");

    let viewer = server.client_with_token("viewer-token-0123456789");
    assert!(
        uris(&viewer).contains(&json!(CHART_APP)),
        "{:?}",
        uris(&viewer)
    );
    let read = viewer.rpc("resources/read", json!({"uri": CHART_APP}), no_caps());
    assert_eq!(complete(&read)["contents"][0]["mimeType"], APP_MIME_TYPE);
}
