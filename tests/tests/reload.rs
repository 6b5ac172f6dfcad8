//! Hot reload of the tools directory while the server runs: components
//! added, replaced (the rolling upgrade of SEP-2322: a multi-round call
//! started on one version finishes on the next), removed; reloads that
//! would serve a name twice are refused; broken files are skipped.
//!
//! The server polls every 50 ms. Tests wait for the outcome of a reload
//! (a list that changed, a log line, a notification) with a deadline.
//! Files that are not regular files or are too large are refused without
//! stalling the reloads or the server, and a change made while the server
//! loads its components is not lost.

use airlock_e2e::mcp::{
    assert_subscription_note, complete, elicit, error_code, error_message, input_request_keys,
    input_required, text,
};
use airlock_e2e::numbered::{numbered_components, numbered_tool};
use airlock_e2e::{
    Airlock, HttpServer, McpClient, ToolCall, ToolsDir, code, flows, listen, wait_until,
};
use serde_json::{Value, json};

/// How often the server looks at the tools directory, in milliseconds.
const RELOAD_INTERVAL: &str = "50ms";

/// The descriptions of `order` in `rolling-v1` and `rolling-v2`.
const V1_DESCRIPTION: &str = "Orders a shirt (v1): asks for the size.";
const V2_DESCRIPTION: &str = "Orders a shirt (v2): asks for the size, then the color.";

fn serve_reloading(tools: &ToolsDir) -> HttpServer {
    Airlock::new(tools)
        .args(["--reload-interval", RELOAD_INTERVAL])
        .start_http()
}

/// The description of tool `name`, if it is served.
fn description(client: &dyn McpClient, name: &str) -> Option<String> {
    client
        .list_all("tools/list", "tools")
        .iter()
        .find(|tool| tool["name"] == name)
        .and_then(|tool| tool["description"].as_str().map(str::to_string))
}

/// Waits until tool `name` is served with `expected` as its description.
#[track_caller]
fn wait_for_description(client: &dyn McpClient, name: &str, expected: &str) {
    wait_until(
        &format!("`{name}` described as {expected:?}"),
        || match description(client, name) {
            Some(found) if found == expected => Ok(()),
            other => Err(format!("{other:?}")),
        },
    );
}

/// Waits until the served tools are exactly `expected` (sorted).
#[track_caller]
fn wait_for_tools(client: &dyn McpClient, expected: &[&str]) {
    wait_until(&format!("the tools {expected:?}"), || {
        let names = client.tool_names();
        if names == expected {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    });
}

/// An accepted one-field form answer under `key`.
fn answer(key: &str, field: &str, value: &str) -> Value {
    json!({ key: elicit("accept", Some(json!({ field: value }))) })
}

/// Asserts `response` is -32602 for an unknown tool.
#[track_caller]
fn assert_unknown_tool(response: &Value) {
    assert_eq!(error_code(response), code::INVALID_PARAMS, "{response}");
    assert!(
        error_message(response).contains("Unknown tool"),
        "{response}"
    );
}

/// The rolling upgrade: `order` v1 asks for the size; the file is replaced
/// by v2 (with `publish`); the retry with v1's requestState and the size
/// runs on v2, which keeps the size and asks only for the colour.
fn rolling_upgrade(publish: impl FnOnce(&ToolsDir)) {
    let tools = ToolsDir::new();
    tools.add_as("rolling-v1", "order.wasm");
    let server = serve_reloading(&tools);
    let client = server.client();
    assert_eq!(
        description(&client, "order").as_deref(),
        Some(V1_DESCRIPTION)
    );
    let call = ToolCall::new("order", json!({}));

    // v1 on its own: size, then done.
    let first = client.call(&call);
    let asked = input_required(&first);
    assert_eq!(input_request_keys(asked), vec!["size".to_string()]);
    let done = client.call(&call.retry(asked, answer("size", "size", "M")));
    assert_eq!(text(complete(&done)), "v1: size=M");

    // A call started on v1...
    let started = client.call(&call);
    let started = input_required(&started).clone();
    assert_eq!(input_request_keys(&started), vec!["size".to_string()]);

    // ...the file is replaced by v2...
    publish(&tools);
    wait_for_description(&client, "order", V2_DESCRIPTION);

    // ...and the retry with v1's state and the size runs on v2: it keeps the
    // size and asks only for what is new.
    let second = client.call(&call.retry(&started, answer("size", "size", "L")));
    let asked = input_required(&second);
    assert_eq!(
        input_request_keys(asked),
        vec!["color".to_string()],
        "v2 asks only for the colour: {second}"
    );
    let third = client.call(&call.retry(asked, answer("color", "color", "blue")));
    let done = complete(&third);
    assert_eq!(text(done), "v2: size=L color=blue", "{third}");
}

#[test]
fn rolling_upgrade_by_rename_finishes_a_call_on_the_new_version() {
    rolling_upgrade(|tools| {
        tools.publish_as("rolling-v2", "order.wasm");
    });
}

#[test]
fn rolling_upgrade_by_overwrite_finishes_a_call_on_the_new_version() {
    rolling_upgrade(|tools| {
        tools.add_as("rolling-v2", "order.wasm");
    });
}

#[test]
fn an_added_component_is_served_and_a_removed_one_is_gone() {
    let tools = ToolsDir::with(&["hash"]);
    let server = serve_reloading(&tools);
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"]);

    tools.publish_as("deploy", "deploy.wasm");
    wait_for_tools(&client, &["confirm", "deploy", "sha256"]);
    flows::deploy_staging(&client);
    flows::sha256(&client);

    // A multi-round call in flight when its component goes away.
    let call = ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "production"}),
    );
    let first = client.call(&call);
    let asked = input_required(&first).clone();

    tools.remove("deploy.wasm");
    wait_for_tools(&client, &["sha256"]);
    assert_unknown_tool(&client.call(&ToolCall::new(
        "deploy",
        json!({"service": "billing", "environment": "staging"}),
    )));
    let retry = call.retry(
        &asked,
        json!({"confirm": elicit("accept", Some(json!({"ok": true})))}),
    );
    assert_unknown_tool(&client.call(&retry));
    flows::sha256(&client);
}

#[test]
fn a_listener_is_told_which_lists_a_reload_changed() {
    let tools = ToolsDir::with(&["watcher"]);
    let server = serve_reloading(&tools);
    let client = server.client();
    let (id, mut stream) = listen(
        &client,
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourcesListChanged": true}),
    );
    let mut next_methods = |count: usize, what: &str| -> Vec<String> {
        let mut methods: Vec<String> = (0..count)
            .map(|_| {
                let note = stream.expect_event(what);
                let method = note["method"].as_str().unwrap_or_default().to_string();
                assert_subscription_note(&note, &method, &id);
                method
            })
            .collect();
        methods.sort_unstable();
        methods
    };

    // A tools-only component: the tools list changed, nothing else (if the
    // other lists were announced too, they would come before the next
    // reload's notifications and break the check below).
    tools.publish_as("hash", "hash.wasm");
    assert_eq!(
        next_methods(1, "tools/list_changed for hash.wasm"),
        ["notifications/tools/list_changed"]
    );

    // A component with tools, prompts and resources: all three.
    let all_three = [
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
        "notifications/tools/list_changed",
    ];
    tools.publish_as("everything", "everything.wasm");
    assert_eq!(
        next_methods(3, "the three list_changed for everything.wasm"),
        all_three
    );
    tools.remove("everything.wasm");
    assert_eq!(
        next_methods(3, "the three list_changed after removing everything.wasm"),
        all_three
    );
    assert_eq!(client.tool_names(), ["hold", "relist", "sha256", "touch"]);
}

#[test]
fn a_reload_that_would_serve_a_tool_twice_is_refused() {
    let tools = ToolsDir::with(&["hash"]);
    let server = serve_reloading(&tools);
    let client = server.client();

    tools.publish_as("hash", "hash-copy.wasm");
    let line = server.wait_for_log_lines(&["reload refused"], 1);
    assert!(
        line.contains("still serving the previous set"),
        "the log should say the previous set is still served: {line}"
    );
    assert!(
        line.contains("hash.wasm") && line.contains("hash-copy.wasm") && line.contains("sha256"),
        "the log should name the tool and both files: {line}"
    );
    assert_eq!(client.tool_names(), ["sha256"]);
    flows::sha256(&client);

    // While the clash lasts, no reload goes through, not even of a new
    // component...
    tools.publish_as("deploy", "deploy.wasm");
    server.wait_for_log_lines(&["reload refused"], 2);
    assert_eq!(client.tool_names(), ["sha256"]);
    flows::sha256(&client);

    // ...and once it is resolved, the next reload serves the new set.
    tools.remove("hash-copy.wasm");
    wait_for_tools(&client, &["confirm", "deploy", "sha256"]);
    flows::deploy_staging(&client);
}

#[test]
fn a_broken_file_added_at_runtime_is_skipped() {
    let tools = ToolsDir::with(&["hash"]);
    let server = serve_reloading(&tools);
    let client = server.client();

    tools.add_bytes("x.wasm", b"\0asm\x0d\0\x01\0 garbage, not a component");
    let line = server.wait_for_log_lines(&["skipping component", "x.wasm"], 1);
    assert!(
        !line.contains("reload refused"),
        "one broken file does not refuse the reload: {line}"
    );
    assert_eq!(client.tool_names(), ["sha256"]);
    flows::sha256(&client);

    // Reloads keep working with the broken file still there.
    tools.publish_as("deploy", "deploy.wasm");
    wait_for_tools(&client, &["confirm", "deploy", "sha256"]);
    flows::deploy_staging(&client);
    flows::sha256(&client);
}

#[test]
fn a_fifo_beside_a_component_stalls_neither_reloads_nor_a_one_thread_server() {
    // One worker thread, as a one-CPU pod gets: a reload that waited on the
    // FIFO there would stop the server answering.
    let tools = ToolsDir::with(&["hash"]);
    let server = Airlock::new(&tools)
        .args([
            "--reload-interval",
            RELOAD_INTERVAL,
            "--worker-threads",
            "1",
        ])
        .start_http();
    let client = server.client();

    // Nobody writes to the FIFO: opening it to read would wait forever.
    tools.add_fifo("x.toml");
    tools.publish_as("deploy", "x.wasm");
    let line = server.wait_for_log_lines(&["skipping component", "x.wasm"], 1);
    assert!(
        line.contains("x.toml") && line.contains("a FIFO, not a regular file"),
        "{line}"
    );
    flows::sha256(&client);

    // Later changes are still picked up.
    tools.publish_as("watcher", "later.wasm");
    wait_for_tools(&client, &["hold", "relist", "sha256", "touch"]);
    flows::sha256(&client);
}

#[test]
fn files_too_large_added_at_runtime_are_refused_by_their_size_unread() {
    let tools = ToolsDir::with(&["hash"]);
    let server = serve_reloading(&tools);
    let client = server.client();
    let (growth_kib, ()) = server.peak_growth(|| {
        // Sparse: they take no disk, but reading one whole takes its size
        // in memory. The manifest first, so that its component is never
        // loaded without it.
        tools.add_sparse("huge.wasm", b"\0asm\x0d\0\x01\0", 2 << 30);
        tools.add_sparse("m.toml", b"# a manifest\n", 256 << 20);
        tools.publish_as("deploy", "m.wasm");
        let huge = server.wait_for_log_lines(&["skipping component", "huge.wasm"], 1);
        assert!(huge.contains("larger than the limit of 128MiB"), "{huge}");
        let manifest = server.wait_for_log_lines(&["skipping component", "m.wasm"], 1);
        assert!(
            manifest.contains("m.toml") && manifest.contains("larger than the limit of 64KiB"),
            "{manifest}"
        );
    });
    assert!(
        growth_kib < 64 << 10,
        "the server grew by {growth_kib} KiB while refusing files of 2 GiB and 256 MiB: \
         it read what it should have refused unread"
    );
    assert_eq!(client.tool_names(), ["sha256"]);
    flows::sha256(&client);
}

#[test]
fn a_component_published_while_the_server_loads_is_served() {
    // Enough components that the start-up load takes a while; the compile
    // cache shows when it is under way (an artifact is written once a
    // component is compiled, after the directory was read).
    let tools = ToolsDir::with(&["hash"]);
    for (number, copy) in numbered_components(16).iter().enumerate() {
        tools.add_bytes(&format!("{}.wasm", numbered_tool(number)), copy);
    }
    let cache = tempfile::tempdir().unwrap();
    let airlock = Airlock::new(&tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(cache.path())
        .args(["--reload-interval", RELOAD_INTERVAL]);
    let starting = std::thread::spawn(move || airlock.start_http());
    wait_until("the start-up load to be under way", || {
        let artifacts = std::fs::read_dir(cache.path())
            .map_err(|err| err.to_string())?
            .flatten()
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "cwasm"))
            .count();
        if artifacts > 0 {
            Ok(())
        } else {
            Err("no compiled component yet".to_owned())
        }
    });
    tools.publish_as("deploy", "deploy.wasm");
    let server = starting.join().expect("the server starts");
    let client = server.client();
    wait_until("deploy.wasm to be served", || {
        let names = client.tool_names();
        if names.iter().any(|name| name == "deploy") {
            Ok(())
        } else {
            Err(format!("{names:?}"))
        }
    });
    flows::deploy_staging(&client);
}
