//! Who may use what, against the real binary over HTTP: scopes and groups
//! from the tokens file and from JWTs, the access policy file, listings per
//! caller, resource updates per token, and the 403 `insufficient_scope`
//! challenge an OAuth client steps up from (MCP authorization: scope
//! challenges).

use std::path::PathBuf;

use airlock_e2e::jwt;
use airlock_e2e::legacy::Endpoint;
use airlock_e2e::mcp::{ToolCall, complete, error_code, is_error, no_caps};
use airlock_e2e::watcher::touch;
use airlock_e2e::{Airlock, HttpServer, McpClient, ToolsDir, listen, run_airlock};
use serde_json::{Value, json};
use tempfile::TempDir;

const ISSUER: &str = "https://idp.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const SECRET: &[u8] = b"e2e-hs256-secret-with-more-than-32-bytes";

/// `deploy` needs the scope `deploy:write`; `confirm` the group `ops`.
const DEPLOY_MANIFEST: &str = "[tools.deploy]\nallow = [\"scope:deploy:write\"]\n\
                               [tools.confirm]\nallow = [\"group:ops\"]\n";

/// Files of one test.
struct Files(TempDir);

impl Files {
    fn new() -> Files {
        Files(tempfile::tempdir().expect("a temporary directory"))
    }

    fn write(&self, name: &str, text: &[u8]) -> PathBuf {
        let path = self.0.path().join(name);
        std::fs::write(&path, text).expect("write a file");
        path
    }
}

fn tools() -> ToolsDir {
    let tools = ToolsDir::with(&["hash", "deploy"]);
    tools.add_bytes("deploy.toml", DEPLOY_MANIFEST.as_bytes());
    tools
}

fn deploy() -> ToolCall {
    ToolCall::new(
        "deploy",
        json!({"service": "api", "environment": "staging"}),
    )
}

fn tool_names(client: &dyn McpClient) -> Vec<String> {
    client.tool_names()
}

fn jwt_with(scope: &str) -> String {
    let mut claims = jwt::claims(ISSUER, RESOURCE, "carol");
    claims["scope"] = json!(scope);
    jwt::hs256(SECRET, &claims)
}

/// A server taking HS256 JWTs for `RESOURCE`, with `policy` as its access
/// policy.
fn jwt_server(files: &Files, policy: &str) -> HttpServer {
    jwt_server_with(files, policy, &[])
}

/// [`jwt_server`] with more options.
fn jwt_server_with(files: &Files, policy: &str, options: &[&str]) -> HttpServer {
    jwt_server_of(&tools(), files, policy, options)
}

/// [`jwt_server_with`] serving `tools`.
fn jwt_server_of(tools: &ToolsDir, files: &Files, policy: &str, options: &[&str]) -> HttpServer {
    let secret = files.write("hs256.secret", SECRET);
    let policy = files.write("access.toml", policy.as_bytes());
    Airlock::new(tools)
        .args(options)
        .args(["--oauth-resource", RESOURCE])
        .args(["--oauth-authorization-server", ISSUER])
        .args(["--jwt-hs256-secret-file", secret.to_str().unwrap()])
        .args(["--access-policy", policy.to_str().unwrap()])
        .start_http()
}

#[test]
fn a_jwt_lacking_a_scope_gets_the_step_up_challenge_and_a_stronger_one_succeeds() {
    let files = Files::new();
    let server = jwt_server(&files, "[list]\nallow = [\"authenticated\"]\n");
    let weak = server.client_with_token(&jwt_with("mcp:tools"));
    assert!(tool_names(&weak).contains(&"deploy".to_owned()));
    let (_, reply) = weak.send("tools/call", deploy().params());
    assert_eq!(reply.status, 403, "{}", reply.text());
    assert_eq!(
        reply.header("www-authenticate"),
        Some(
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"deploy:write\", resource_metadata=\"{METADATA_URL}\""
            )
            .as_str()
        )
    );
    let body = reply.json();
    assert_eq!(error_code(&body), -31403, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("deploy") && m.contains("deploy:write")),
        "{body}"
    );

    // The client asks for the scope the challenge named, and retries.
    let strong = server.client_with_token(&jwt_with("mcp:tools deploy:write"));
    let (_, reply) = strong.send("tools/call", deploy().params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!is_error(complete(&reply.json())));
}

#[test]
fn a_caller_keeps_no_more_scopes_of_a_jwt_than_jwt_max_names() {
    let files = Files::new();
    let policy = "[list]\nallow = [\"authenticated\"]\n";
    // `deploy:write` comes second: with one name kept, it is dropped.
    let token = jwt_with("mcp:tools deploy:write");
    let server = jwt_server_with(&files, policy, &["--jwt-max-names", "1"]);
    let (_, reply) = server
        .client_with_token(&token)
        .send("tools/call", deploy().params());
    assert_eq!(reply.status, 403, "{}", reply.text());
    let server = jwt_server(&files, policy);
    let (_, reply) = server
        .client_with_token(&token)
        .send("tools/call", deploy().params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!is_error(complete(&reply.json())));
}

#[test]
fn tokens_file_scopes_and_groups_decide_what_each_caller_sees_and_calls() {
    let files = Files::new();
    let tokens = files.write(
        "tokens",
        b"plain-token-0123456789 plain\n\
          ops-token-0123456789 ops scope:deploy:write group:ops\n",
    );
    let server = Airlock::new(&tools())
        .args(["--tokens-file", tokens.to_str().unwrap()])
        .start_http();
    let plain = server.client_with_token("plain-token-0123456789");
    assert_eq!(tool_names(&plain), ["sha256"]);
    let listed = plain.rpc("tools/list", json!({}), no_caps());
    assert_eq!(complete(&listed)["cacheScope"], "private", "{listed}");
    let (_, reply) = plain.send("tools/call", deploy().params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let body: Value = reply.json();
    assert_eq!(body["error"]["message"], "Unknown tool: deploy", "{body}");

    let ops = server.client_with_token("ops-token-0123456789");
    let mut names = tool_names(&ops);
    names.sort();
    assert_eq!(names, ["confirm", "deploy", "sha256"]);
    let (_, reply) = ops.send("tools/call", deploy().params());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!is_error(complete(&reply.json())));
}

#[test]
fn a_malformed_policy_stops_the_start_naming_the_file_and_line() {
    let files = Files::new();
    let policy = files.write("access.toml", b"[require]\nallow = [\"role:admin\"]\n");
    let tools = tools();
    let (status, _, stderr) = run_airlock(&[
        "serve",
        "--tools",
        tools.path().to_str().unwrap(),
        "--listen",
        "127.0.0.1:0",
        "--access-policy",
        policy.to_str().unwrap(),
    ]);
    assert!(!status.success(), "{stderr}");
    let at = format!("{}:2:", policy.display());
    assert!(
        stderr.contains(&at) && stderr.contains("role:admin"),
        "{stderr}"
    );
}

#[test]
fn resource_updates_reach_only_the_tokens_that_may_read_the_resource() {
    let files = Files::new();
    let tools = ToolsDir::with(&["watcher"]);
    tools.add_bytes(
        "watcher.toml",
        b"[resources.\"watch://alpha\"]\nallow = [\"scope:watch:read\"]\n",
    );
    let server = jwt_server_of(&tools, &files, "", &[]);
    // Both tokens are carol's; only one may read watch://alpha.
    let (strong, weak) = (jwt_with("watch:read"), jwt_with("mcp:tools"));
    let reader = server.client_with_token(&strong);
    let uris = ["watch://alpha", "watch://beta"];
    let filter = json!({ "resourceSubscriptions": uris });
    let (_, mut may_read) = listen(&reader, filter.clone());
    let (_, mut may_not) = listen(&server.client_with_token(&weak), filter);
    let session = Endpoint::new(server.url())
        .with_bearer(&weak)
        .open(json!({}));
    for uri in uris {
        session.result("resources/subscribe", json!({ "uri": uri }));
    }
    let mut session_stream = session.listen();
    for uri in uris {
        touch(&reader, uri);
    }
    for uri in uris {
        let note = may_read.expect_event(uri);
        assert_eq!(note["params"]["uri"], uri, "{note}");
    }
    // Changes come in order: the first each weak stream gets is the first
    // it may hear of.
    let note = may_not.expect_event("the update of watch://beta");
    assert_eq!(note["params"]["uri"], "watch://beta", "{note}");
    let note = session_stream.expect_event("the update of watch://beta");
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], "watch://beta", "{note}");
}
