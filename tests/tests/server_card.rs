//! The server card (`GET /mcp/server-card`) against the real binary: public
//! (no token, any `Origin`, but the `Host` allow-list), cacheable with an
//! `ETag` that `If-None-Match` turns into 304, and saying what
//! `server/discover` says, also after a reload changes what is loaded.

use airlock_e2e::http::raw_http;
use airlock_e2e::mcp::{META_SERVER_INFO, PROTOCOL_VERSION, complete, no_caps};
use airlock_e2e::{Airlock, HttpServer, McpClient, Reply, ToolsDir, wait_until};
use serde_json::{Value, json};

const TOKEN: &str = "card-test-token-0123456789";

fn get_card(server: &HttpServer, host: &str, extra_headers: &str) -> Reply {
    let request = format!(
        "GET /mcp/server-card HTTP/1.1\r\nHost: {host}\r\nAccept: application/mcp-server-card+json\r\n{extra_headers}Connection: close\r\n\r\n"
    );
    raw_http(&server.addr(), request.as_bytes())
}

/// What `server/discover` answers `client`.
fn discover(client: &dyn McpClient) -> Value {
    complete(&client.rpc("server/discover", json!({}), no_caps())).clone()
}

#[test]
fn the_card_is_public_cacheable_and_says_what_discover_says() {
    let tokens = tempfile::NamedTempFile::new().expect("a tokens file");
    std::fs::write(tokens.path(), format!("{TOKEN} card\n")).expect("write the tokens");
    let server = Airlock::new(&ToolsDir::with(&["everything"]))
        .args(["--tokens-file", tokens.path().to_str().unwrap()])
        .args(["--server-name", "com.example/tools"])
        .args(["--server-description", "Example tools"])
        .args(["--public-url", "https://mcp.example.com/mcp"])
        .start_http();

    // No token, and a web page's Origin: the card is public.
    let reply = get_card(
        &server,
        &server.addr(),
        "Origin: https://catalog.example\r\n",
    );
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(
        reply.media_type().as_deref(),
        Some("application/mcp-server-card+json")
    );
    assert_eq!(reply.header("access-control-allow-origin"), Some("*"));
    assert_eq!(reply.header("cache-control"), Some("public, max-age=60"));
    let etag = reply.header("etag").expect("an ETag").to_owned();
    let card = reply.json();
    assert_eq!(
        card["$schema"],
        "https://static.modelcontextprotocol.io/schemas/v2/server-card.schema.json"
    );
    assert_eq!(card["name"], "com.example/tools");
    assert_eq!(card["description"], "Example tools");
    let remote = &card["remotes"][0];
    assert_eq!(remote["type"], "streamable-http", "{card}");
    assert_eq!(remote["url"], "https://mcp.example.com/mcp", "{card}");
    let versions = remote["supportedProtocolVersions"].as_array().unwrap();
    assert!(versions.contains(&json!(PROTOCOL_VERSION)), "{card}");
    assert!(versions.contains(&json!("2025-11-25")), "{card}");

    // The endpoint itself still wants the token; with it, discover agrees
    // with the card.
    let anonymous = server.client().send("server/discover", json!({}));
    assert_eq!(anonymous.1.status, 401, "{}", anonymous.1.text());
    let discovered = discover(&server.client_with_token(TOKEN));
    assert_eq!(
        card["version"], discovered["_meta"][META_SERVER_INFO]["version"],
        "{card}"
    );
    assert_eq!(
        card["_meta"]["airlock/capabilities"], discovered["capabilities"],
        "{card}"
    );
    // The current tag: 304, no body, the same tag and caching headers.
    let again = get_card(
        &server,
        &server.addr(),
        &format!("If-None-Match: {etag}\r\n"),
    );
    assert_eq!(again.status, 304, "{}", again.text());
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    assert_eq!(again.header("cache-control"), Some("public, max-age=60"));
    // Another tag: the card.
    let other = get_card(&server, &server.addr(), "If-None-Match: \"other\"\r\n");
    assert_eq!(other.status, 200);

    // A Host the server does not accept is refused, card or not.
    let foreign = get_card(&server, "evil.example", "");
    assert_eq!(foreign.status, 403, "{}", foreign.text());
}

#[test]
fn the_card_follows_what_is_loaded() {
    let tools = ToolsDir::with(&["hash"]);
    let server = Airlock::new(&tools)
        .args(["--reload-interval", "50ms"])
        .start_http();
    let before = get_card(&server, &server.addr(), "");
    assert_eq!(before.status, 200, "{}", before.text());
    let etag = before.header("etag").expect("an ETag").to_owned();
    assert!(
        before.json()["remotes"].is_null(),
        "no public URL, no remote"
    );
    assert!(
        before.json()["_meta"]["airlock/capabilities"]["extensions"]
            .get("io.modelcontextprotocol/skills")
            .is_none(),
        "{}",
        before.text()
    );

    tools.add_bytes(
        "hash.skills/hashing/SKILL.md",
        b"---\nname: hashing\ndescription: How to hash text\n---\nCall sha256.\n",
    );
    let after = wait_until("the card to declare skills after the reload", || {
        let reply = get_card(
            &server,
            &server.addr(),
            &format!("If-None-Match: {etag}\r\n"),
        );
        if reply.status == 200 {
            Ok(reply)
        } else {
            Err(format!("still {}", reply.status))
        }
    });
    assert_ne!(after.header("etag"), Some(etag.as_str()));
    let card = after.json();
    assert!(
        card["_meta"]["airlock/capabilities"]["extensions"]
            .get("io.modelcontextprotocol/skills")
            .is_some(),
        "{card}"
    );
    assert_eq!(
        card["_meta"]["airlock/capabilities"],
        discover(&server.client())["capabilities"]
    );
}
