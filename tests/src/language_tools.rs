//! Tools written in other languages than Rust (Python, JavaScript): where
//! their build scripts put the components, servers that share one on-disk
//! cache of compiled components, and the flows every language's samples
//! must pass alike.
//!
//! Such a component is large (an interpreter with a pre-initialised heap,
//! 12-19 MB) and takes tens of seconds to compile, so these servers use an
//! on-disk cache of compiled components shared by every test (and kept
//! between runs) in `<target>/<language>-tools/cache`, warmed once per
//! component and per test binary.

use std::fs;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use ring::digest;
use serde_json::{Value, json};

use crate::everything::{completion_params, prompt_params};
use crate::flows::assert_form;
use crate::mcp::{
    complete, elicit, error_code, error_message, input_required, is_error, retry_params, text,
};
use crate::paths::target_dir;
use crate::{
    Airlock, McpClient, ToolCall, ToolsDir, all_caps, code, no_caps, run_airlock_with_env,
};

/// How long a start or an `inspect` that compiles a component may
/// take before the test gives up: a hang guard, not a speed target (one
/// component takes tens of seconds to compile on a busy 2-core machine).
pub const COMPILE_TIMEOUT: Duration = Duration::from_secs(900);

/// The components one language's build script makes.
pub struct LanguageTools {
    /// The folder under the target directory (`python-tools`).
    folder: &'static str,
    /// The script that builds them, named when one is missing.
    build_script: &'static str,
    /// Components whose compiled artifact is known to be in the cache.
    warmed: Mutex<Vec<&'static str>>,
}

/// The Python samples (`scripts/build-python-tools`).
pub static PYTHON: LanguageTools = LanguageTools::new("python-tools", "scripts/build-python-tools");

/// The JavaScript samples (`scripts/build-javascript-tools`).
pub static JAVASCRIPT: LanguageTools =
    LanguageTools::new("javascript-tools", "scripts/build-javascript-tools");

impl LanguageTools {
    const fn new(folder: &'static str, build_script: &'static str) -> LanguageTools {
        LanguageTools {
            folder,
            build_script,
            warmed: Mutex::new(Vec::new()),
        }
    }

    /// Where the build script puts the components.
    pub fn dir(&self) -> PathBuf {
        target_dir().join(self.folder)
    }

    /// The cache of compiled components the servers share.
    pub fn cache_dir(&self) -> PathBuf {
        self.dir().join("cache")
    }

    /// A tools directory holding the built component `name`.
    pub fn tools_with(&self, name: &str) -> ToolsDir {
        let built = self.dir().join(format!("{name}.wasm"));
        let bytes = fs::read(&built).unwrap_or_else(|e| {
            panic!(
                "the component {} is missing ({e}): run {}",
                built.display(),
                self.build_script
            )
        });
        let tools = ToolsDir::new();
        tools.add_bytes(&format!("{name}.wasm"), &bytes);
        tools
    }

    /// `airlock serve` on `tools`, with the shared cache of compiled
    /// components (and tasks in memory: the cache directory is shared by
    /// parallel servers).
    pub fn server_on(&self, tools: &ToolsDir) -> Airlock {
        Airlock::new(tools)
            .with_cache()
            .arg("--cache-dir")
            .arg(self.cache_dir())
            .args(["--task-store", "memory"])
    }

    /// A server for component `name`, compiled once per test binary at
    /// most: the first test to need it starts a server that fills the cache
    /// while the others wait, so parallel tests do not each spend a core
    /// compiling.
    pub fn server(&self, name: &'static str) -> Airlock {
        let tools = self.tools_with(name);
        let mut warmed = self
            .warmed
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if warmed.is_empty() {
            self.prune_cache();
        }
        if !warmed.contains(&name) {
            drop(
                self.server_on(&tools)
                    .start_within(COMPILE_TIMEOUT)
                    .start_http(),
            );
            warmed.push(name);
        }
        self.server_on(&tools)
    }

    /// Checks what `airlock inspect` reports of component `name`: its exact
    /// size, the interpreter's heap snapshot as initial memory (MiB, not
    /// KiB), the memory limit it runs under, and its compile time.
    pub fn assert_inspect_reports_footprint(&self, name: &str) {
        let file = self.dir().join(format!("{name}.wasm"));
        let bytes = fs::metadata(&file)
            .unwrap_or_else(|e| panic!("{}: {e}: run {}", file.display(), self.build_script))
            .len();
        // A cache of its own: the component is compiled, not loaded.
        let cache = tempfile::tempdir().unwrap();
        let (status, report, stderr) = run_airlock_with_env(
            &["inspect", file.to_str().unwrap()],
            &[("XDG_CACHE_HOME", cache.path())],
            COMPILE_TIMEOUT,
        );
        assert!(status.success(), "{status}: {stderr}");
        let line = |prefix: &str| {
            report
                .lines()
                .find(|line| line.starts_with(prefix))
                .unwrap_or_else(|| panic!("no `{prefix}` line in {report}"))
                .to_owned()
        };
        assert!(
            line("size: ").contains(&format!(" MiB ({bytes} bytes, ")),
            "{report}"
        );
        let memory = line("memory: starts with ");
        assert!(
            memory.contains(" MiB of linear memory; may grow to 64MiB"),
            "{report}"
        );
        assert!(
            line("compile: ").ends_with("(the compile cache makes later starts load it instead)")
        );
    }

    /// Removes the cache's artifacts of components that are no longer built
    /// (`<SHA-256 of the .wasm>-<engine>.cwasm`): every rebuild of a sample
    /// would otherwise leave a file of tens of MB behind.
    fn prune_cache(&self) {
        let hex = |bytes: &[u8]| bytes.iter().map(|b| format!("{b:02x}")).collect::<String>();
        let built: Vec<String> = fs::read_dir(self.dir())
            .into_iter()
            .flatten()
            .flatten()
            .map(|entry| entry.path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "wasm"))
            .filter_map(|path| fs::read(path).ok())
            .map(|bytes| hex(digest::digest(&digest::SHA256, &bytes).as_ref()))
            .collect();
        for entry in fs::read_dir(self.cache_dir())
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".cwasm") && !built.iter().any(|hash| name.starts_with(hash.as_str()))
            {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// Defines, for each `name: COMPONENT => flow;`, a test `http::name` and a
/// test `stdio::name` running `flow` (a `fn(&dyn McpClient)`, a path
/// resolved in the calling module) against a server of `LANGUAGE`'s
/// component `COMPONENT` (`LANGUAGE`: a [`LanguageTools`] in scope there).
#[macro_export]
macro_rules! language_over_both_transports {
    ($language:ident; $($name:ident: $component:expr => $($flow:ident)::+;)*) => {
        mod http {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    let server = super::$language.server($component).start_http();
                    super::$($flow)::+(&server.client());
                }
            )*
        }
        mod stdio {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[test]
                fn $name() {
                    let server = super::$language.server($component).start_stdio();
                    super::$($flow)::+(&server);
                }
            )*
        }
    };
}

/// Checks that `response` is a complete error result saying `message`.
#[track_caller]
pub fn assert_error_result(response: &Value, message: &str) {
    let r = complete(response);
    assert!(is_error(r), "{response}");
    assert_eq!(text(r), message, "{response}");
}

/// Makes `call`, which asks for input, answers it with `answers`, and
/// checks the call then ends with an error result saying `message`.
#[track_caller]
pub fn assert_answer_ends_in_error(
    client: &dyn McpClient,
    call: &ToolCall,
    answers: Value,
    message: &str,
) {
    let first = client.call(call);
    let response = client.call(&call.retry(input_required(&first), answers));
    assert_error_result(&response, message);
}

/// Makes `call` twice (it asks each time), then sends its second round,
/// answered with `answers`, three times (a client retrying it), checking
/// each result with `check`: every one runs in a fresh instance, so a
/// module-level counter the tool increments must read 1 each time.
pub fn assert_retries_run_fresh(
    client: &dyn McpClient,
    call: &ToolCall,
    answers: Value,
    check: impl Fn(&Value),
) {
    for _ in 0..2 {
        let again = client.call(call);
        input_required(&again);
    }
    let first = client.call(call);
    let second_round = call.retry(input_required(&first), answers);
    for _ in 0..3 {
        check(&client.call(&second_round));
    }
}

/// The plain `sha256` sample of every language: the known SHA-256 test
/// vectors (one longer than a 64-byte block); a missing `text`, and a
/// number, refused by the host for its input schema with an error result
/// before the tool runs (the tool's own check would say "`text` must be a
/// string").
pub fn sha256(client: &dyn McpClient) {
    for (input, digest) in [
        (
            "abc",
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        ),
        (
            "",
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ),
        (
            "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
        ),
    ] {
        let response = client.call(&ToolCall::new("sha256", json!({ "text": input })));
        let r = complete(&response);
        assert!(!is_error(r), "{response}");
        assert_eq!(text(r), digest, "{response}");
    }
    for (arguments, violation) in [
        (json!({}), r#"(root): "text" is a required property"#),
        (
            json!({ "text": 7 }),
            r#"/text: the value is not of type "string""#,
        ),
    ] {
        let response = client.call(&ToolCall::new("sha256", arguments));
        assert_error_result(
            &response,
            &format!(
                "Tool 'sha256' was not run: its arguments do not match its input schema: \
                 {violation}"
            ),
        );
    }
}

/// The flows of the notebook sample (`py_notes`, `js_notes`): a resource,
/// a resource template, a prompt that may ask for input, and completions,
/// the same in every language.
pub mod notes {
    use super::*;

    /// The contents of a `resources/read` of `uri`: its one part.
    #[track_caller]
    fn read_one(client: &dyn McpClient, uri: &str) -> Value {
        let response = client.rpc("resources/read", json!({ "uri": uri }), no_caps());
        let parts = complete(&response)["contents"].clone();
        assert_eq!(
            parts.as_array().map(Vec::len),
            Some(1),
            "one part: {response}"
        );
        parts[0].clone()
    }

    /// The text of every message of a `prompts/get` result.
    #[track_caller]
    fn prompt_texts(response: &Value) -> Vec<String> {
        complete(response)["messages"]
            .as_array()
            .unwrap_or_else(|| panic!("a prompt result has messages: {response}"))
            .iter()
            .map(|m| m["content"]["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }

    /// The resource, the template and the prompt declared, and no tools.
    pub fn lists(client: &dyn McpClient) {
        let resources = client.list_all("resources/list", "resources");
        assert_eq!(resources.len(), 1, "{resources:?}");
        assert_eq!(resources[0]["uri"], "notes://readme", "{resources:?}");
        assert_eq!(resources[0]["title"], "About the notebook", "{resources:?}");
        assert_eq!(resources[0]["mimeType"], "text/plain", "{resources:?}");
        let templates = client.list_all("resources/templates/list", "resourceTemplates");
        assert_eq!(templates.len(), 1, "{templates:?}");
        assert_eq!(
            templates[0]["uriTemplate"], "notes://note/{id}",
            "{templates:?}"
        );
        assert_eq!(templates[0]["name"], "note", "{templates:?}");
        let prompts = client.list_all("prompts/list", "prompts");
        assert_eq!(prompts.len(), 1, "{prompts:?}");
        assert_eq!(prompts[0]["name"], "note_summary", "{prompts:?}");
        assert_eq!(
            prompts[0]["arguments"],
            json!([
                {"name": "id", "description": "The note's id.", "required": true},
                {"name": "style", "required": false}
            ]),
            "{prompts:?}"
        );
        assert!(client.tool_names().is_empty(), "the notebook has no tools");
    }

    /// A fixed resource and a templated one read as text; an unknown id is
    /// not found (-32602).
    pub fn reads(client: &dyn McpClient) {
        assert_eq!(
            read_one(client, "notes://readme"),
            json!({
                "uri": "notes://readme",
                "mimeType": "text/plain",
                "text": "A notebook of 3 notes; read one at notes://note/{id}."
            })
        );
        assert_eq!(
            read_one(client, "notes://note/12"),
            json!({"uri": "notes://note/12", "mimeType": "text/plain", "text": "Call the plumber"})
        );
        let response = client.rpc(
            "resources/read",
            json!({ "uri": "notes://note/99" }),
            no_caps(),
        );
        assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
    }

    /// Without `style` the prompt asks for it; the retry (a fresh instance)
    /// renders the prompt with the answer.
    pub fn prompt_asks(client: &dyn McpClient) {
        let params = prompt_params("note_summary", json!({ "id": "2" }), all_caps());
        let first = client.exchange("prompts/get", params.clone()).response;
        let asked = input_required(&first);
        let req = assert_form(asked, "style", "style", Some("string"));
        assert_eq!(
            req["params"]["requestedSchema"]["properties"]["style"]["enum"],
            json!(["brief", "detailed"]),
            "{first}"
        );
        let answer = json!({ "style": elicit("accept", Some(json!({ "style": "detailed" }))) });
        let second = client
            .exchange("prompts/get", retry_params(&params, asked, answer))
            .response;
        assert_eq!(
            complete(&second)["description"],
            "a detailed summary",
            "{second}"
        );
        assert_eq!(
            prompt_texts(&second),
            vec!["Summarise this note (detailed): Water the plants"],
            "{second}"
        );
    }

    /// With both arguments the prompt renders at once, as one user message.
    pub fn prompt_direct(client: &dyn McpClient) {
        let params = prompt_params(
            "note_summary",
            json!({ "id": "1", "style": "brief" }),
            no_caps(),
        );
        let response = client.exchange("prompts/get", params).response;
        assert_eq!(
            complete(&response)["messages"][0]["role"],
            "user",
            "{response}"
        );
        assert_eq!(
            prompt_texts(&response),
            vec!["Summarise this note (brief): Buy milk"],
            "{response}"
        );
    }

    /// An unknown note reaches the client as -32602 with the SDK's message.
    pub fn prompt_unknown_note(client: &dyn McpClient) {
        let params = prompt_params("note_summary", json!({ "id": "7" }), all_caps());
        let response = client.exchange("prompts/get", params).response;
        assert_eq!(error_code(&response), code::INVALID_PARAMS, "{response}");
        assert!(
            error_message(&response).contains("no note with id '7'"),
            "{response}"
        );
    }

    /// The note id completes for the prompt and for the template.
    pub fn completes(client: &dyn McpClient) {
        for reference in [
            json!({"type": "ref/prompt", "name": "note_summary"}),
            json!({"type": "ref/resource", "uri": "notes://note/{id}"}),
        ] {
            let params = completion_params(reference.clone(), "id", "1");
            let response = client.exchange("completion/complete", params).response;
            let completion = &complete(&response)["completion"];
            assert_eq!(completion["values"], json!(["1", "12"]), "{response}");
            assert_eq!(completion["total"], 2, "{response}");
            assert_eq!(completion["hasMore"], false, "{response}");
        }
    }
}

/// The flow of the bar-chart sample (`py_bar_chart`, `js_bar_chart`): a
/// tool with an MCP App, a tool only the App may call, and the App's HTML,
/// each carrying its `_meta.ui` over the wire, and a skill the component
/// serves, the same in every language.
pub mod apps {
    use super::*;

    /// The App's resource.
    const APP: &str = "ui://bar-chart/app.html";
    /// The App MIME type.
    const APP_MIME_TYPE: &str = "text/html;profile=mcp-app";

    /// The extension declared; the tools naming their App; the App's HTML
    /// listed and read with its MIME type and presentation; the tool's
    /// text fallback beside its structured bars; the served skill.
    pub fn bar_chart(client: &dyn McpClient) {
        let discovered = client.rpc("server/discover", json!({}), no_caps());
        assert_eq!(
            complete(&discovered)["capabilities"]["extensions"]["io.modelcontextprotocol/ui"],
            json!({ "mimeTypes": [APP_MIME_TYPE] }),
            "{discovered}"
        );

        let tools = client.list_all("tools/list", "tools");
        let tool = |name: &str| {
            tools
                .iter()
                .find(|tool| tool["name"] == name)
                .unwrap_or_else(|| panic!("no tool {name} in {tools:?}"))
        };
        assert_eq!(
            tool("bar_chart")["_meta"],
            json!({ "ui": { "resourceUri": APP } }),
            "{tools:?}"
        );
        assert_eq!(
            tool("sort_bars")["_meta"],
            json!({ "ui": { "resourceUri": APP, "visibility": ["app"] } }),
            "{tools:?}"
        );

        let ui =
            json!({ "ui": { "permissions": { "clipboardWrite": {} }, "prefersBorder": true } });
        let resources = client.list_all("resources/list", "resources");
        let listed = resources
            .iter()
            .find(|resource| resource["uri"] == APP)
            .unwrap_or_else(|| panic!("no App in {resources:?}"));
        assert_eq!(listed["mimeType"], APP_MIME_TYPE, "{resources:?}");
        assert_eq!(listed["_meta"], ui, "{resources:?}");
        let read = client.rpc("resources/read", json!({ "uri": APP }), no_caps());
        let parts = &complete(&read)["contents"];
        assert_eq!(parts.as_array().map(Vec::len), Some(1), "one part: {read}");
        assert_eq!(parts[0]["mimeType"], APP_MIME_TYPE, "{read}");
        assert_eq!(parts[0]["_meta"], ui, "{read}");
        let html = parts[0]["text"].as_str().unwrap_or_default();
        assert!(html.starts_with("<!doctype html>"), "{read}");

        let call = ToolCall::new("bar_chart", json!({ "values": { "a": 1, "b": 3 } }));
        let response = client.call(&call);
        let result = complete(&response);
        assert!(!is_error(result), "{response}");
        assert_eq!(text(result), "a: 1 (25%)\nb: 3 (75%)", "{response}");
        assert_eq!(
            result["structuredContent"]["bars"],
            json!([
                { "label": "a", "value": 1, "share": 0.25 },
                { "label": "b", "value": 3, "share": 0.75 }
            ]),
            "{response}"
        );

        let skills = client.rpc("skills/list", json!({}), no_caps());
        let served = &complete(&skills)["skills"];
        assert_eq!(served.as_array().map(Vec::len), Some(1), "{skills}");
        assert_eq!(served[0]["uri"], "skill://bar-chart/SKILL.md", "{skills}");
        assert_eq!(served[0]["resources"], "dynamic", "{skills}");
        assert_eq!(
            served[0]["frontmatter"],
            json!({
                "name": "bar-chart",
                "description": "How to show labelled numbers as a bar chart with the bar_chart tool",
            }),
            "{skills}"
        );
    }
}
