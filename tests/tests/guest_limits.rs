//! What one call can make the host send and hold is bounded, whatever the
//! shape of what the guest returns or creates:
//!
//! - the output limit bounds the encoded reply (tools, input requests,
//!   prompts, resource reads, completions), not only the strings in it;
//! - content blocks and input requests per outcome are counted;
//! - host resources (pollables, HTTP header fields, open files) are bounded
//!   per instance, and a component without an `[http]` grant gets no
//!   `wasi:http` at all.
//!
//! Each hostile call fails alone (an `isError` result, or a JSON-RPC error
//! on methods without one), and the server's memory peaks at most a bounded
//! amount above where it was (measured from `/proc`, not timed).

use airlock_e2e::hostile::{
    answer, assert_limit, assert_sha256_works, call, serve, toml_path, tools_with,
};
use airlock_e2e::mcp::{complete, no_caps};
use airlock_e2e::{HttpServer, McpClient};
use serde_json::{Value, json};

/// The most a reply to one hostile call may be here, in bytes: far below
/// what the same call produced before the limits counted its shape.
const SMALL_REPLY: usize = 64 << 10;

/// The most the server's memory may peak above its resident size during
/// one hostile call, in KiB: room for the instance itself (the guest's
/// memory cap is 64 MiB by default, these guests use far less) and the
/// host's copy of what it returned.
const PEAK_GROWTH_KIB: u64 = 96 << 10;

/// Runs `run` against `server`, asserting the server's memory stayed within
/// [`PEAK_GROWTH_KIB`] of where it was; returns the response.
#[track_caller]
fn bounded(server: &HttpServer, what: &str, run: impl FnOnce() -> Value) -> Value {
    let (growth_kib, response) = server.peak_growth(run);
    assert!(
        growth_kib < PEAK_GROWTH_KIB,
        "{what}: the server's memory peaked {growth_kib} KiB above where it was"
    );
    let size = response.to_string().len();
    assert!(
        size < SMALL_REPLY,
        "{what}: a reply of {size} bytes: {}",
        &response.to_string()[..200.min(size)]
    );
    response
}

fn wide(server: &HttpServer, shape: &str, count: usize) -> Value {
    let client = server.client();
    bounded(server, shape, || {
        call(
            &client,
            "wide_output",
            json!({"shape": shape, "count": count}),
        )
    })
}

#[test]
fn a_repeated_audience_is_sent_once_per_role() {
    let server = serve(&tools_with(None), &[]);
    let response = wide(&server, "audience", 4_000_000);
    let block = &complete(&response)["content"][0];
    assert_eq!(
        block["annotations"]["audience"],
        json!(["user", "assistant"])
    );
    assert_sha256_works(&server.client());
}

#[test]
fn too_many_content_blocks_fail_alone() {
    let server = serve(&tools_with(None), &[]);
    let response = wide(&server, "empty_blocks", 200_000);
    assert_limit(&response, &["more than 1000 content blocks"]);
    let within = call(
        &server.client(),
        "wide_output",
        json!({"shape": "empty_blocks", "count": 1000}),
    );
    assert_eq!(
        complete(&within)["content"].as_array().map(Vec::len),
        Some(1000)
    );
    assert_sha256_works(&server.client());
}

#[test]
fn the_output_limit_counts_the_encoded_reply() {
    let tools = tools_with(Some("[limits]\nmax-output = \"8KiB\"\n"));
    let server = serve(&tools, &[]);
    // 900 one-character blocks: 900 bytes of text, some 25 KB encoded.
    let response = wide(&server, "blocks", 900);
    assert_limit(&response, &["8 KiB output limit"]);
    // 60 empty forms: about 2 KB of strings, over 4 KB encoded.
    let tools = tools_with(Some("[limits]\nmax-output = \"4KiB\"\n"));
    let server = serve(&tools, &[]);
    let response = wide(&server, "forms", 60);
    assert_limit(&response, &["4 KiB output limit"]);
    let within = call(
        &server.client(),
        "wide_output",
        json!({"shape": "forms", "count": 10}),
    );
    assert_eq!(within["result"]["resultType"], "input_required", "{within}");
}

#[test]
fn too_many_input_requests_fail_alone() {
    let server = serve(&tools_with(None), &[]);
    let response = wide(&server, "roots", 5_000);
    assert_limit(&response, &["more than 64 input requests"]);
    let response = call(
        &server.client(),
        "wide_output",
        json!({"shape": "roots", "count": 64}),
    );
    assert_eq!(
        response["result"]["inputRequests"]
            .as_object()
            .map(|requests| requests.len()),
        Some(64)
    );
}

#[test]
fn prompts_reads_and_completions_are_bounded_too() {
    let tools = tools_with(Some("[limits]\nmax-output = \"4KiB\"\n"));
    let server = serve(&tools, &[]);
    let client = server.client();
    let failure = |response: &Value, words: &[&str]| {
        let message = response["error"]["message"].as_str().unwrap_or_default();
        for word in words {
            assert!(message.contains(word), "{word:?} missing: {response}");
        }
    };

    let prompt = bounded(&server, "prompt", || {
        client.rpc(
            "prompts/get",
            json!({"name": "wide_prompt", "arguments": {"count": "5000"}}),
            no_caps(),
        )
    });
    failure(&prompt, &["wide_prompt", "more than 1000 content blocks"]);
    let prompt = bounded(&server, "prompt", || {
        client.rpc(
            "prompts/get",
            json!({"name": "wide_prompt", "arguments": {"count": "500"}}),
            no_caps(),
        )
    });
    failure(&prompt, &["wide_prompt", "4 KiB output limit"]);

    let read = bounded(&server, "read", || {
        client.rpc("resources/read", json!({"uri": "wide://5000"}), no_caps())
    });
    failure(&read, &["wide://5000", "more than 1000 content blocks"]);
    let read = bounded(&server, "read", || {
        client.rpc("resources/read", json!({"uri": "wide://500"}), no_caps())
    });
    failure(&read, &["wide://500", "4 KiB output limit"]);

    // 100 values of 38 bytes: under 4 KiB of strings, over 4 KiB encoded.
    let completion = client.rpc(
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "wide_prompt"},
            "argument": {"name": "count", "value": "38"}
        }),
        no_caps(),
    );
    failure(&completion, &["4 KiB output limit"]);
    let completion = client.rpc(
        "completion/complete",
        json!({
            "ref": {"type": "ref/prompt", "name": "wide_prompt"},
            "argument": {"name": "count", "value": "2"}
        }),
        no_caps(),
    );
    assert_eq!(
        complete(&completion)["completion"]["values"]
            .as_array()
            .map(Vec::len),
        Some(100),
        "{completion}"
    );
}

#[test]
fn without_an_http_grant_wasi_http_fails_the_call_before_anything_is_made() {
    let server = serve(&tools_with(None), &[]);
    let client = server.client();
    let own = format!("http://127.0.0.1:{}/mcp", server.port());
    let response = call(&client, "http_get", json!({ "url": own }));
    assert_limit(
        &response,
        &["wasi:http", "not granted", "[http] allow list"],
    );
    let response = call(
        &client,
        "hoard",
        json!({"kind": "fields", "count": 10, "kib": 1}),
    );
    assert_limit(&response, &["not granted"]);
    // The rest of the component still works.
    assert_eq!(
        answer(&call(
            &client,
            "hoard",
            json!({"kind": "pollables", "count": 10})
        )),
        "ok: held 10 pollables"
    );
    assert_sha256_works(&client);
}

#[test]
fn host_resources_are_bounded_per_instance() {
    let data = tempfile::tempdir().unwrap();
    std::fs::write(data.path().join("file.txt"), "x").unwrap();
    let manifest = format!(
        "[http]\nallow = [\"example.com\"]\n[[dirs]]\nhost = {}\nguest = \"/data\"\n",
        toml_path(data.path())
    );
    let server = serve(&tools_with(Some(&manifest)), &[]);
    let client = server.client();
    for (args, what) in [
        (json!({"kind": "pollables", "count": 100_000}), "pollables"),
        (
            json!({"kind": "fields", "count": 5_000, "kib": 60}),
            "header fields",
        ),
        (
            json!({"kind": "files", "count": 100_000, "path": "/data/file.txt"}),
            "open files",
        ),
    ] {
        let response = bounded(&server, what, || call(&client, "hoard", args));
        assert_limit(&response, &["more than 256 host resources"]);
        assert_sha256_works(&client);
    }
    assert_eq!(
        answer(&call(
            &client,
            "hoard",
            json!({"kind": "fields", "count": 100, "kib": 60})
        )),
        "ok: held 100 fields"
    );
    // Header fields over 64 KiB: wasi:http fails the call.
    let response = call(
        &client,
        "hoard",
        json!({"kind": "fields", "count": 1, "kib": 65}),
    );
    assert_limit(&response, &["crashed"]);
    server.wait_for_log("total size of fields exceeds limit");
}
