//! Loading the tools directory: bad components are skipped with a log line
//! naming them, duplicate tool names and bad directories stop the server
//! (a manifest's `name-prefix` serves two components of the same names),
//! the compiled-component cache is reused, and many components load
//! together. What is not a regular file is refused without waiting on it,
//! what is too large is refused by its size before it is read, and what a
//! component lists is bounded so that every page of a list fits the
//! output limit. The server listens before its first load is done: a list
//! sent as soon as it listens waits for that load and is whole, and past
//! `--load-wait` it is refused with `Retry-After`, never answered in part.

use airlock_e2e::mcp::{complete, no_caps, text, with_meta};
use airlock_e2e::numbered::{numbered_components, numbered_tool};
use airlock_e2e::{Airlock, McpClient, ToolCall, ToolsDir, run_airlock};
use serde_json::{Value, json};

/// The header of a component: the magic, the version and the layer.
const COMPONENT_HEADER: &[u8] = b"\0asm\x0d\0\x01\0";

/// One GiB, in bytes.
const GIB: u64 = 1 << 30;

/// The stderr lines that mention `needle`.
fn lines_naming<'a>(stderr: &'a str, needle: &str) -> Vec<&'a str> {
    stderr.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn wrong_world_and_garbage_are_skipped_and_named() {
    let tools = ToolsDir::with(&["hash", "wrong_world"]);
    tools.add_bytes("garbage.wasm", b"\0asm\x01\0\0\0 this is not a component");
    tools.add_bytes("text.wasm", b"hello, I am not WebAssembly at all");
    let server = Airlock::new(&tools).start_http();
    let stderr = server.stderr();
    for file in ["wrong_world.wasm", "garbage.wasm", "text.wasm"] {
        assert!(
            !lines_naming(&stderr, file).is_empty(),
            "a log line should name the skipped {file}:\n{stderr}"
        );
    }
    assert_eq!(server.client().tool_names(), ["sha256"]);
    airlock_e2e::flows::sha256(&server.client());
}

/// A component that imports `interface` as an (empty) instance and does
/// nothing else: the smallest component built against some version of the
/// tool contract.
fn component_importing(interface: &str) -> Vec<u8> {
    let name = interface.as_bytes();
    let mut bytes = COMPONENT_HEADER.to_vec();
    // Type section: one instance type without declarations.
    bytes.extend_from_slice(&[0x07, 3, 1, 0x42, 0]);
    // Import section: `interface`, an instance of that type.
    let size = u8::try_from(name.len() + 5).expect("a short name");
    bytes.extend_from_slice(&[0x0a, size, 1, 0x00, name.len() as u8]);
    bytes.extend_from_slice(name);
    bytes.extend_from_slice(&[0x05, 0]);
    bytes
}

#[test]
fn a_component_built_against_an_older_contract_is_refused_with_what_to_do() {
    let tools = ToolsDir::with(&["hash"]);
    tools.add_bytes("old.wasm", &component_importing("airlock:mcp/host@0.1.0"));
    let server = Airlock::new(&tools).start_http();
    let stderr = server.stderr();
    let lines = lines_naming(&stderr, "old.wasm");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("built against airlock:mcp@0.1.0")
                && line.contains("rebuild it with the SDK of this version")),
        "a log line should name the file, its contract version and the fix:\n{stderr}"
    );
    assert_eq!(server.client().tool_names(), ["sha256"]);
}

#[test]
fn a_component_with_a_malformed_prompt_is_skipped_and_named() {
    // bad-prompt lists a good tool and a prompt with an empty description:
    // the whole component is skipped, its tool included.
    let tools = ToolsDir::with(&["hash", "bad-prompt"]);
    let server = Airlock::new(&tools).start_http();
    let stderr = server.stderr();
    let lines = lines_naming(&stderr, "bad_prompt.wasm");
    assert!(
        lines.iter().any(|line| line.contains("skipping component")
            && line.contains("undescribed_prompt")
            && line.contains("empty description")),
        "a log line should name the file, the prompt and what is wrong with it:\n{stderr}"
    );
    let client = server.client();
    assert_eq!(client.tool_names(), ["sha256"]);
    let prompts = client.list_all("prompts/list", "prompts");
    assert!(prompts.is_empty(), "no prompt is served: {prompts:?}");
    airlock_e2e::flows::sha256(&client);
}

#[test]
fn skipped_components_do_not_stop_stdio_mode() {
    let tools = ToolsDir::with(&["hash", "wrong_world"]);
    let server = Airlock::new(&tools).start_stdio();
    assert_eq!(server.tool_names(), ["sha256"]);
    assert!(
        !lines_naming(&server.stderr(), "wrong_world.wasm").is_empty(),
        "{}",
        server.stderr()
    );
}

#[test]
fn duplicate_tool_names_refuse_to_start() {
    let tools = ToolsDir::new();
    tools.add_as("hash", "hash.wasm");
    tools.add_as("hash", "hash-copy.wasm");
    let (status, stderr) = Airlock::new(&tools).run_expecting_exit();
    assert!(
        !status.success(),
        "must refuse to start: {status}\n{stderr}"
    );
    assert!(
        stderr.contains("hash.wasm") && stderr.contains("hash-copy.wasm"),
        "the error should name both files:\n{stderr}"
    );
    assert!(stderr.contains("sha256"), "and the tool name:\n{stderr}");
}

/// What the probe's `env` tool (called as `name`) says `WHO` is.
fn who_answers(client: &dyn McpClient, name: &str) -> String {
    let response = client.call(&ToolCall::new(name, json!({})));
    let seen: Value = serde_json::from_str(&text(complete(&response))).unwrap();
    seen["vars"]["WHO"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn a_name_prefix_serves_two_components_of_the_same_names() {
    let tools = ToolsDir::new();
    tools.add_as("probe", "a.wasm");
    tools.add_as("probe", "b.wasm");
    tools.add_bytes("a.toml", b"[env]\nWHO = { value = \"a\" }\n");
    tools.add_bytes("b.toml", b"[env]\nWHO = { value = \"b\" }\n");
    let (status, stderr) = Airlock::new(&tools).run_expecting_exit();
    assert!(!status.success(), "a clash must refuse to start:\n{stderr}");
    assert!(
        stderr.contains("a.wasm") && stderr.contains("b.wasm") && stderr.contains("name-prefix"),
        "the error should name both files and the manifest key that serves both:\n{stderr}"
    );

    tools.add_bytes(
        "b.toml",
        b"name-prefix = \"b_\"\n\n[env]\nWHO = { value = \"b\" }\n\n[tools.env]\nallow = [\"anyone\"]\n",
    );
    let server = Airlock::new(&tools).start_http();
    let client = server.client();
    let names = client.tool_names();
    assert!(
        names.iter().any(|n| n == "env") && names.iter().any(|n| n == "b_env"),
        "both serve, b's tools under its prefix: {names:?}"
    );
    assert_eq!(who_answers(&client, "env"), "a");
    assert_eq!(who_answers(&client, "b_env"), "b");

    // A multi-round call of the prefixed tool: the component sees its own
    // name in every round, and the sealed state leads back to it.
    let call = ToolCall::new("b_count_rounds", json!({"rounds": 2}));
    let first = client.call(&call);
    let asked = airlock_e2e::mcp::input_required(&first);
    let done = client.call(&call.retry(asked, Value::Null));
    assert_eq!(text(complete(&done)), "1,1", "{done}");
}

#[test]
fn a_missing_tools_dir_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-tools-dir");
    let (status, stderr) = Airlock::with_tools_path(&missing).run_expecting_exit();
    assert!(!status.success(), "{status}\n{stderr}");
    assert!(
        stderr.contains("no-such-tools-dir"),
        "the error should name the directory:\n{stderr}"
    );
}

#[test]
fn a_tools_path_that_is_a_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tools-file");
    std::fs::write(&file, "not a directory").unwrap();
    let (status, stderr) = Airlock::with_tools_path(&file).run_expecting_exit();
    assert!(!status.success(), "{status}\n{stderr}");
    assert!(stderr.contains("tools-file"), "{stderr}");
}

#[test]
fn an_unreadable_tools_dir_is_an_error() {
    // A symlink loop cannot be opened by any user, root included (file
    // permissions would not stop root).
    let tools = ToolsDir::with(&["hash"]);
    let looped = tools.path().join("looped");
    std::os::unix::fs::symlink(tools.path().join("loop-back"), &looped).unwrap();
    std::os::unix::fs::symlink(&looped, tools.path().join("loop-back")).unwrap();
    let (status, stderr) = Airlock::with_tools_path(&looped).run_expecting_exit();
    assert!(!status.success(), "{status}\n{stderr}");
    assert!(
        stderr.contains("cannot read the tools directory"),
        "{stderr}"
    );
    assert!(stderr.contains("looped"), "{stderr}");
}

#[test]
fn the_compiled_cache_is_reused() {
    let tools = ToolsDir::with(&["hash", "deploy"]);
    let cache = tempfile::tempdir().unwrap();
    let airlock = Airlock::new(&tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(cache.path());
    let names = {
        let server = airlock.start_http();
        server.client().tool_names()
    };
    let cached = std::fs::read_dir(cache.path()).unwrap().flatten().count();
    assert!(cached > 0, "the cache dir should hold compiled components");
    let server = airlock.start_http();
    assert_eq!(server.client().tool_names(), names);
    let response = server
        .client()
        .call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert_eq!(
        text(complete(&response)).trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn a_corrupt_cache_entry_is_not_trusted() {
    let tools = ToolsDir::with(&["hash"]);
    let cache = tempfile::tempdir().unwrap();
    let airlock = Airlock::new(&tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(cache.path());
    drop(airlock.start_http());
    // Overwrite every cached file with junk.
    let mut corrupted = 0;
    let mut stack = vec![cache.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                std::fs::write(&path, b"junk junk junk").unwrap();
                corrupted += 1;
            }
        }
    }
    assert!(corrupted > 0, "nothing was cached");
    let server = airlock.start_http();
    let response: Value = server
        .client()
        .call(&ToolCall::new("sha256", json!({"text": "abc"})));
    assert_eq!(
        text(complete(&response)).trim(),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn many_distinct_components_load_together_and_list_in_file_order() {
    // Components load several at once; what they serve is still put
    // together in file-name order, compiled or taken from the cache.
    const COUNT: usize = 12;
    let tools = ToolsDir::new();
    for (number, copy) in numbered_components(COUNT).iter().enumerate() {
        tools.add_bytes(&format!("{}.wasm", numbered_tool(number)), copy);
    }
    let cache = tempfile::tempdir().unwrap();
    let airlock = Airlock::new(&tools)
        .with_cache()
        .arg("--cache-dir")
        .arg(cache.path());
    let expected: Vec<String> = (0..COUNT).map(numbered_tool).collect();
    for start in ["compiled", "from the cache"] {
        let server = airlock.start_http();
        // In the order listed (`tool_names` would sort them).
        let listed: Vec<String> = server
            .client()
            .list_all("tools/list", "tools")
            .iter()
            .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert_eq!(listed, expected, "{start}");
        for number in [0, 7, COUNT - 1] {
            let response = server
                .client()
                .call(&ToolCall::new(&numbered_tool(number), json!({})));
            assert_eq!(text(complete(&response)), numbered_tool(number), "{start}");
        }
    }
}

/// Asserts that some line of `stderr` says the component `file` was
/// skipped and contains every one of `words`.
#[track_caller]
fn assert_skipped(stderr: &str, file: &str, words: &[&str]) {
    assert!(
        lines_naming(stderr, file)
            .iter()
            .any(|line| line.contains("skipping component")
                && words.iter().all(|word| line.contains(word))),
        "a log line should say {file} was skipped, with {words:?}:\n{stderr}"
    );
}

#[test]
fn a_fifo_for_a_manifest_stops_neither_the_start_nor_inspect() {
    // Nobody writes to the FIFO: opening it to read would wait forever.
    let tools = ToolsDir::with(&["hash"]);
    tools.add_as("deploy", "x.wasm");
    tools.add_fifo("x.toml");
    let server = Airlock::new(&tools).start_http();
    assert_skipped(
        &server.stderr(),
        "x.wasm",
        &["x.toml", "a FIFO, not a regular file"],
    );
    assert_eq!(server.client().tool_names(), ["sha256"]);
    airlock_e2e::flows::sha256(&server.client());

    let component = tools.path().join("x.wasm");
    let (status, out, err) = run_airlock(&["inspect", component.to_str().unwrap()]);
    assert!(!status.success(), "inspect must refuse it:\n{out}");
    assert!(err.contains("x.toml") && err.contains("a FIFO"), "{err}");
}

#[test]
fn files_too_large_are_refused_by_their_size_unread() {
    // Sparse: they take no disk, but reading one whole takes its size in
    // memory.
    let tools = ToolsDir::with(&["hash"]);
    tools.add_sparse("huge.wasm", COMPONENT_HEADER, 2 * GIB);
    tools.add_as("deploy", "m.wasm");
    tools.add_sparse("m.toml", b"# a manifest\n", GIB);
    let server = Airlock::new(&tools).start_http();
    let stderr = server.stderr();
    assert_skipped(&stderr, "huge.wasm", &["larger than the limit of 128MiB"]);
    assert_skipped(
        &stderr,
        "m.wasm",
        &["m.toml", "larger than the limit of 64KiB"],
    );
    assert_eq!(server.client().tool_names(), ["sha256"]);
    // Neither was read: the most the server ever held is far below them.
    let peak = server.memory().peak_kib;
    assert!(
        peak < 512 << 10,
        "the server peaked at {peak} KiB: it read a file it should have refused unread"
    );

    let huge = tools.path().join("huge.wasm");
    let (status, out, err) = run_airlock(&["inspect", huge.to_str().unwrap()]);
    assert!(!status.success(), "inspect must refuse it:\n{out}");
    assert!(err.contains("larger than the limit of 128MiB"), "{err}");
    // The limit is a setting.
    let (status, _, err) = run_airlock(&[
        "inspect",
        "--max-component-size",
        "64KiB",
        tools.path().join("m.wasm").to_str().unwrap(),
    ]);
    assert!(!status.success());
    assert!(err.contains("larger than the limit of 64KiB"), "{err}");
}

#[test]
fn a_component_listing_an_oversized_schema_is_refused_and_named() {
    // big-schema lists one tool whose input schema is 8 MiB: served, one
    // page of tools/list would be 8 MiB, past the 1 MiB output limit.
    let tools = ToolsDir::with(&["hash", "big-schema"]);
    let server = Airlock::new(&tools).start_http();
    assert_skipped(
        &server.stderr(),
        "big_schema.wasm",
        &["tool `big_schema`", "--max-schema"],
    );
    let client = server.client();
    let (_, reply) = client.send("tools/list", with_meta(json!({}), no_caps()));
    assert!(
        reply.body.len() <= 1 << 20,
        "a tools/list reply of {} bytes, past the output limit",
        reply.body.len()
    );
    assert_eq!(client.tool_names(), ["sha256"]);
    airlock_e2e::flows::sha256(&client);
}

#[test]
fn list_pages_are_bounded_in_bytes_by_the_output_limit() {
    const COUNT: usize = 24;
    const LIMIT: usize = 2 << 10;
    let tools = ToolsDir::with(&["hash"]);
    for (number, copy) in numbered_components(COUNT).iter().enumerate() {
        tools.add_bytes(&format!("{}.wasm", numbered_tool(number)), copy);
    }
    let server = Airlock::new(&tools)
        .args(["--max-output", "2KiB"])
        .start_http();
    let client = server.client();
    let mut names = Vec::new();
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let params = match &cursor {
            Some(cursor) => json!({ "cursor": cursor }),
            None => json!({}),
        };
        let (_, reply) = client.send("tools/list", with_meta(params, no_caps()));
        let response: Value = serde_json::from_slice(&reply.body).expect("a JSON reply");
        let result = complete(&response);
        // The page's own members, as encoded: what the output limit bounds.
        let mut page = serde_json::Map::new();
        page.insert("tools".to_owned(), result["tools"].clone());
        if let Some(next) = result.get("nextCursor") {
            page.insert("nextCursor".to_owned(), next.clone());
        }
        let bytes = Value::Object(page).to_string().len();
        assert!(
            bytes <= LIMIT,
            "a page of {bytes} bytes, past --max-output 2KiB"
        );
        pages += 1;
        names.extend(
            result["tools"]
                .as_array()
                .expect("a tools array")
                .iter()
                .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned()),
        );
        match result.get("nextCursor") {
            Some(next) if !next.is_null() => cursor = Some(next.clone()),
            _ => break,
        }
    }
    assert!(pages > 1, "{COUNT} tools fit on one page of 2 KiB?");
    let mut expected: Vec<String> = (0..COUNT).map(numbered_tool).collect();
    expected.push("sha256".to_owned());
    names.sort_unstable();
    expected.sort_unstable();
    assert_eq!(names, expected, "every tool, each once");
}

/// Copies of the `numbered` guest, compiled cold (the servers of these
/// tests have no compile cache): enough that the first load outlasts a
/// request sent as soon as the server listens (seconds, where the request
/// takes milliseconds).
const SLOW_LOAD: usize = 16;

/// How long the first load of [`slow_loading_tools`] may take on a busy
/// machine.
const LOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(180);

/// A tools directory whose first load is slow (see [`SLOW_LOAD`]), beside
/// `hash`, and every tool it serves, in list (file name) order.
fn slow_loading_tools() -> (ToolsDir, Vec<String>) {
    let tools = ToolsDir::with(&["hash"]);
    for (number, copy) in numbered_components(SLOW_LOAD).iter().enumerate() {
        tools.add_bytes(&format!("{}.wasm", numbered_tool(number)), copy);
    }
    let expected = std::iter::once("sha256".to_owned())
        .chain((0..SLOW_LOAD).map(numbered_tool))
        .collect();
    (tools, expected)
}

/// The tool names of a `tools/list` result, in list order.
fn listed_names(result: &Value) -> Vec<String> {
    result["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tools array: {result}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `tools/list`, as a client that has just seen the port open sends it.
fn list_tools(server: &airlock_e2e::HttpServer) -> airlock_e2e::Reply {
    server
        .client()
        .send("tools/list", with_meta(json!({}), no_caps()))
        .1
}

#[test]
fn a_list_sent_as_soon_as_the_server_listens_is_the_whole_list() {
    let (tools, expected) = slow_loading_tools();
    let server = Airlock::new(&tools).start_http_loading();
    let reply = list_tools(&server);
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body = reply.json();
    let result = complete(&body);
    assert_eq!(
        listed_names(result),
        expected,
        "a list answered while the components loaded:\n{}",
        server.stderr()
    );
    assert_eq!(result["ttlMs"], 60_000, "{result}");
    assert_eq!(result["cacheScope"], "public", "{result}");
    assert_eq!(
        text(complete(&server.client().call(&ToolCall::new(
            &numbered_tool(SLOW_LOAD - 1),
            json!({})
        )))),
        numbered_tool(SLOW_LOAD - 1)
    );
}

#[test]
fn past_the_load_wait_a_list_is_refused_with_retry_after_never_answered_in_part() {
    let (tools, expected) = slow_loading_tools();
    let mut server = Airlock::new(&tools)
        .args(["--load-wait", "0s"])
        .start_http_loading();
    let reply = list_tools(&server);
    match reply.status {
        503 => {
            assert_eq!(reply.header("retry-after"), Some("5"), "{reply:?}");
            let error = &reply.json()["error"];
            assert_eq!(error["code"], -32603, "{error}");
            assert_eq!(error["data"]["reason"], "loading", "{error}");
        }
        // The load finished first (a fast machine): then the list is whole.
        200 => assert_eq!(listed_names(complete(&reply.json())), expected),
        status => panic!("{status}: {}", reply.text()),
    }
    // Once loaded, the list is whole.
    server.wait_until_loaded(LOAD_TIMEOUT);
    let reply = list_tools(&server);
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(listed_names(complete(&reply.json())), expected);
}
