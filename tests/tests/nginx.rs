//! `deploy/nginx` installed as its README says, into a copy of Debian's
//! `/etc/nginx` (Debian's own `nginx.conf`, `conf.d/` and default site):
//! `nginx -t` passes, and through it a real Airlock host answers a 2025-era
//! `initialize`, a 2026-07-28 `tools/call`, and the OAuth protected-resource
//! metadata at both of its paths. With Debian's default site left enabled,
//! `nginx -t` fails loudly instead of the site answering `POST /mcp` with 404.

use std::fs;

use airlock_e2e::http::Headers;
use airlock_e2e::jwt;
use airlock_e2e::legacy::{LEGACY_VERSION, initialize_params};
use airlock_e2e::nginx::DebianLayout;
use airlock_e2e::{Airlock, Http, ToolCall, ToolsDir};
use serde_json::json;

const ISSUER: &str = "https://idp.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const SECRET: &[u8] = b"a-secret-of-at-least-32-bytes-for-hs256";

#[test]
fn the_documented_debian_layout_serves_mcp_and_the_oauth_metadata() {
    let keys = tempfile::tempdir().expect("a temporary directory");
    let secret = keys.path().join("hs256.secret");
    fs::write(&secret, [SECRET, b"\n"].concat()).expect("write the secret");
    let host = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--oauth-resource", RESOURCE])
        .args(["--oauth-authorization-server", ISSUER])
        .arg("--jwt-hs256-secret-file")
        .arg(&secret)
        .start_http();
    let address = host
        .url()
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned();

    let layout = DebianLayout::install(&[address]);
    // The README's reason for removing the default site: while it is
    // enabled, the configuration is refused rather than half-served.
    let default_site = layout.path().join("sites-enabled").join("default");
    fs::copy(
        layout.path().join("sites-available").join("default"),
        &default_site,
    )
    .expect("enable Debian's default site again");
    let refused = layout.check().expect_err("nginx -t with the default site");
    assert!(refused.contains("duplicate default server"), "{refused}");
    fs::remove_file(&default_site).expect("remove the default site");
    let report = layout
        .check()
        .unwrap_or_else(|report| panic!("nginx -t:\n{report}"));
    assert!(report.contains("test is successful"), "{report}");
    let nginx = layout.start();

    let token = jwt::hs256(SECRET, &jwt::claims(ISSUER, RESOURCE, "alice"));
    let client = Http::new(&nginx.url()).with_bearer(&token);

    // A 2025-era `initialize` (the session pool).
    let mut headers = Headers::default();
    headers.set("Content-Type", "application/json");
    headers.set("Accept", "application/json, text/event-stream");
    let reply = client.post_json(
        &headers,
        &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": initialize_params(LEGACY_VERSION, json!({}))}),
    );
    assert_eq!(reply.status, 200, "initialize: {}", reply.text());
    assert_eq!(
        reply.message()["result"]["protocolVersion"],
        LEGACY_VERSION,
        "{}",
        reply.text()
    );

    // A 2026-07-28 call (round robin).
    let (_, reply) = client.send(
        "tools/call",
        ToolCall::new("sha256", json!({"text": "abc"})).params(),
    );
    assert_eq!(reply.status, 200, "tools/call: {}", reply.text());
    assert!(
        reply.message()["result"]["content"][0]["text"]
            .as_str()
            .is_some_and(|text| text.contains("ba7816bf")),
        "{}",
        reply.text()
    );

    // Without a token: 401 naming the metadata, which nginx passes on.
    let (_, reply) = Http::new(&nginx.url()).send("tools/list", json!({}));
    assert_eq!(reply.status, 401, "{}", reply.text());
    let base = nginx.url().trim_end_matches("/mcp").to_owned();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = Http::new(&format!("{base}{path}")).get();
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        let document = reply.json();
        assert_eq!(document["resource"], RESOURCE, "{path}: {document}");
        assert_eq!(document["authorization_servers"], json!([ISSUER]));
    }
    // Anything else stays closed.
    assert_eq!(Http::new(&format!("{base}/metrics")).get().status, 404);
}
