//! HTTP authentication and load safety, against the real binary: JWT access
//! tokens (HS256 secret, ES256 JWK set, critical header extensions), their
//! 401 challenges, the OAuth protected-resource metadata (RFC 9728),
//! `requestState` bound to principals of separate namespaces (tokens file,
//! JWT, unauthenticated HTTP, stdio), and the connection timeouts, cap and
//! shutdown.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::thread::sleep;
use std::time::{Duration, Instant};

use airlock_e2e::http::raw_http;
use airlock_e2e::jwt::{self, EcKey};
use airlock_e2e::mcp::{
    PROTOCOL_VERSION, ToolCall, assert_state_rejected, complete, elicit, input_required, is_error,
    no_caps, request, request_state, text, with_meta,
};
use airlock_e2e::{Airlock, Http, HttpServer, McpClient, ToolsDir, code, run_airlock};
use serde_json::{Value, json};
use tempfile::TempDir;

const ISSUER: &str = "https://idp.example.com";
const OTHER_ISSUER: &str = "https://other-idp.example.com";
const RESOURCE: &str = "https://mcp.example.com/mcp";
const METADATA_URL: &str = "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const SECRET: &[u8] = b"e2e-hs256-secret-with-more-than-32-bytes";

/// A directory of key files for one test.
struct Keys {
    dir: TempDir,
}

impl Keys {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("a temporary directory"),
        }
    }

    fn write(&self, name: &str, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write a key file");
        path
    }

    /// The HS256 secret, with the trailing newline editors add.
    fn secret(&self) -> PathBuf {
        self.write("hs256.secret", [SECRET, b"\n"].concat())
    }
}

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// A server on `components` taking HS256 JWTs, with metadata advertising
/// `ISSUER` for `RESOURCE` (which are then the issuer and audience checked).
fn metadata_server(components: &[&str], keys: &Keys, extra: &[&str]) -> HttpServer {
    Airlock::new(&ToolsDir::with(components))
        .args(["--oauth-resource", RESOURCE])
        .args(["--oauth-authorization-server", ISSUER])
        .args(["--jwt-hs256-secret-file", arg(&keys.secret())])
        .args(extra)
        .start_http()
}

fn sha256_call() -> Value {
    ToolCall::new("sha256", json!({ "text": "abc" })).params()
}

fn token(sub: &str) -> String {
    jwt::hs256(SECRET, &jwt::claims(ISSUER, RESOURCE, sub))
}

fn with(mut claims: Value, field: &str, value: Value) -> Value {
    claims[field] = value;
    claims
}

/// Asserts a 401 with a Bearer challenge; returns the challenge.
#[track_caller]
fn assert_401(client: &Http, what: &str) -> String {
    let (_, reply) = client.send("tools/call", sha256_call());
    assert_eq!(reply.status, 401, "{what}: {}", reply.text());
    let body = reply.assert_error(401, code::INVALID_REQUEST, None);
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Unauthorized")),
        "{what}: {body}"
    );
    let challenge = reply
        .header("www-authenticate")
        .unwrap_or_else(|| panic!("{what}: a 401 needs WWW-Authenticate"))
        .to_string();
    assert!(
        challenge.starts_with("Bearer "),
        "{what}: a Bearer challenge, got {challenge:?}"
    );
    challenge
}

#[test]
fn jwt_access_tokens_are_checked() {
    let keys = Keys::new();
    let server = metadata_server(&["hash"], &keys, &[]);

    let (_, reply) = server
        .client_with_token(&token("alice"))
        .send("tools/call", sha256_call());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert!(!is_error(complete(&reply.json())));

    // No token: a plain challenge, no error code (RFC 6750 §3.1).
    let challenge = assert_401(&server.client(), "no token");
    assert_eq!(
        challenge,
        format!("Bearer realm=\"airlock\", resource_metadata=\"{METADATA_URL}\"")
    );

    let claims = jwt::claims(ISSUER, RESOURCE, "alice");
    // {"alg":"none"}, unsigned.
    let none = format!(
        "eyJhbGciOiJub25lIn0.{}.",
        token("alice").split('.').nth(1).unwrap()
    );
    let bad = [
        (
            "wrong signature",
            jwt::hs256(b"another-secret-that-is-also-32-bytes-long", &claims),
            "signature",
        ),
        (
            "wrong issuer",
            jwt::hs256(SECRET, &with(claims.clone(), "iss", json!(OTHER_ISSUER))),
            "issuer",
        ),
        (
            "wrong audience",
            jwt::hs256(
                SECRET,
                &with(
                    claims.clone(),
                    "aud",
                    json!("https://other.example.com/mcp"),
                ),
            ),
            "audience",
        ),
        (
            "expired",
            jwt::hs256(
                SECRET,
                &with(claims.clone(), "exp", json!(jwt::now() - 3600)),
            ),
            "expired",
        ),
        (
            "not yet valid",
            jwt::hs256(
                SECRET,
                &with(claims.clone(), "nbf", json!(jwt::now() + 3600)),
            ),
            "not valid yet",
        ),
        (
            "string nbf",
            jwt::hs256(SECRET, &with(claims.clone(), "nbf", json!("99999999999"))),
            "malformed",
        ),
        ("alg none", none, "well-formed"),
        (
            "not a JWT",
            "not-a-listed-token-0123".to_string(),
            "not known",
        ),
    ];
    for (what, bad_token, says) in bad {
        let challenge = assert_401(&server.client_with_token(&bad_token), what);
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
        assert!(
            challenge.contains(&format!("resource_metadata=\"{METADATA_URL}\"")),
            "{what}: {challenge}"
        );
        assert!(challenge.contains(says), "{what}: {challenge}");
    }

    // And the good token still works afterwards.
    let (_, reply) = server
        .client_with_token(&token("alice"))
        .send("tools/call", sha256_call());
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn es256_keys_from_a_jwk_set_via_the_environment() {
    let keys = Keys::new();
    let current = EcKey::generate("2026-01");
    let next = EcKey::generate("2026-02");
    let retired = EcKey::generate("2025-12");
    let jwks = keys.write("jwks.json", jwt::jwks(&[&current, &next]).to_string());
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .env("AIRLOCK_JWT_KEY_FILE", &jwks)
        .env("AIRLOCK_JWT_ISSUER", format!("{ISSUER},{OTHER_ISSUER}"))
        .env("AIRLOCK_JWT_AUDIENCE", "airlock-e2e")
        .start_http();
    for (key, issuer) in [(&current, ISSUER), (&next, OTHER_ISSUER)] {
        let token = key.sign(&jwt::claims(issuer, "airlock-e2e", "svc"));
        let (_, reply) = server
            .client_with_token(&token)
            .send("tools/call", sha256_call());
        assert_eq!(reply.status, 200, "{issuer}: {}", reply.text());
    }
    let stale = retired.sign(&jwt::claims(ISSUER, "airlock-e2e", "svc"));
    let challenge = assert_401(&server.client_with_token(&stale), "a key not in the set");
    // No metadata configured: the challenge names none.
    assert!(!challenge.contains("resource_metadata"), "{challenge}");
    assert!(challenge.contains("invalid_token"), "{challenge}");
    // The HS256 form of the same claims is not accepted by EC keys.
    let hs = jwt::hs256(SECRET, &jwt::claims(ISSUER, "airlock-e2e", "svc"));
    assert_401(&server.client_with_token(&hs), "HS256 against EC keys");
}

fn confirm_call(action: &str) -> ToolCall {
    ToolCall::new("confirm", json!({ "action": action }))
}

/// Round 1 of `confirm {action}`; returns its requestState.
fn first_round(client: &dyn McpClient, action: &str) -> String {
    request_state(input_required(&client.call(&confirm_call(action))))
}

/// Round 2 of `confirm {action}` with `state`.
fn second_round(client: &dyn McpClient, action: &str, state: &str) -> Value {
    let yes = json!({"confirm": elicit("accept", Some(json!({"ok": true})))});
    client.call(&confirm_call(action).responses(yes).state(state))
}

#[track_caller]
fn assert_accepted(response: &Value, action: &str) {
    let r = complete(response);
    assert!(!is_error(r), "{response}");
    assert_eq!(text(r).trim(), format!("confirmed {action}"), "{response}");
}

#[test]
fn request_state_is_bound_to_the_jwt_principal() {
    let keys = Keys::new();
    // A file token whose principal is "alice" too: the namespaces differ.
    let tokens = keys.write("tokens", "file-alice-token-0123456789 alice\n");
    let server = metadata_server(
        &["deploy"],
        &keys,
        &[
            "--tokens-file",
            arg(&tokens),
            "--jwt-issuer",
            ISSUER,
            "--jwt-issuer",
            OTHER_ISSUER,
        ],
    );
    let alice = server.client_with_token(&token("alice"));
    let bob = server.client_with_token(&token("bob"));
    let other_alice = server.client_with_token(&jwt::hs256(
        SECRET,
        &jwt::claims(OTHER_ISSUER, RESOURCE, "alice"),
    ));
    let file_alice = server.client_with_token("file-alice-token-0123456789");

    let state = first_round(&alice, "ship");
    for (who, client) in [
        ("another subject", &bob),
        ("the same subject of another issuer", &other_alice),
        ("a tokens-file principal named alice", &file_alice),
    ] {
        let response = second_round(client, "ship", &state);
        assert!(
            response.get("error").is_some(),
            "{who} used alice's requestState: {response}"
        );
        assert_state_rejected(&response);
    }
    // A fresh token for the same principal (new iat/exp) continues the call.
    assert_accepted(&second_round(&alice, "ship", &state), "ship");

    // The other way round: a file principal's state is refused to the JWT one.
    let state = first_round(&file_alice, "roll back");
    assert_state_rejected(&second_round(&alice, "roll back", &state));
    assert_accepted(&second_round(&file_alice, "roll back", &state), "roll back");
}

/// A fresh state key, as `airlock keygen` prints it.
fn state_key() -> String {
    let (status, stdout, stderr) = run_airlock(&["keygen"]);
    assert!(status.success(), "airlock keygen failed: {stderr}");
    stdout.trim().to_string()
}

#[test]
fn request_state_never_crosses_identity_sources() {
    // Every process shares one key ring, so only the principal tells the
    // callers apart.
    let state_keys = state_key();
    let tools = ToolsDir::with(&["deploy"]);
    let keys = Keys::new();
    let tokens = keys.write("tokens", "file-alice-token-0123456789 alice\n");
    let airlock = || Airlock::new(&tools).env("AIRLOCK_STATE_KEYS", &state_keys);
    let open = airlock().start_http();
    let other_open = airlock().start_http();
    let stdio = airlock().start_stdio();
    let authed = airlock()
        .args(["--oauth-resource", RESOURCE])
        .args(["--oauth-authorization-server", ISSUER])
        .args(["--jwt-hs256-secret-file", arg(&keys.secret())])
        .args(["--tokens-file", arg(&tokens)])
        .start_http();

    // The ring is shared: an open server's state opens on another one.
    let state = first_round(&open.client(), "share");
    assert_accepted(
        &second_round(&other_open.client(), "share", &state),
        "share",
    );

    let anonymous = open.client();
    let file_alice = authed.client_with_token("file-alice-token-0123456789");
    let jwt_alice = authed.client_with_token(&token("alice"));
    // JWT subjects spelled like the other sources' principals, old and new.
    let jwt_anonymous = authed.client_with_token(&token("anonymous"));
    let jwt_stdio = authed.client_with_token(&token("stdio"));
    let jwt_local = authed.client_with_token(&token("local"));
    let callers: [(&str, &dyn McpClient); 7] = [
        ("unauthenticated HTTP", &anonymous),
        ("stdio", &stdio),
        ("tokens-file alice", &file_alice),
        ("JWT sub alice", &jwt_alice),
        ("JWT sub anonymous", &jwt_anonymous),
        ("JWT sub stdio", &jwt_stdio),
        ("JWT sub local", &jwt_local),
    ];
    for (i, (sealer, sealing)) in callers.iter().enumerate() {
        let action = format!("sealed for {sealer}");
        let state = first_round(*sealing, &action);
        for (j, (caller, calling)) in callers.iter().enumerate() {
            if i != j {
                let response = second_round(*calling, &action, &state);
                assert!(
                    response.get("error").is_some(),
                    "{caller} opened a requestState sealed for {sealer}: {response}"
                );
                assert_state_rejected(&response);
            }
        }
        assert_accepted(&second_round(*sealing, &action, &state), &action);
    }
}

#[test]
fn reserved_or_ambiguous_tokens_file_names_stop_the_start() {
    let keys = Keys::new();
    for name in [
        "anonymous",
        "stdio",
        "local",
        "Anonymous",
        "a:b",
        "jwt:https://idp.example.com#alice",
        "team#1",
    ] {
        let tokens = keys.write(
            "tokens",
            format!("good-token-0123456789 alice\nbad-token-0123456789 {name}\n"),
        );
        let (status, stderr) = Airlock::new(&ToolsDir::with(&["hash"]))
            .args(["--tokens-file", arg(&tokens)])
            .run_expecting_exit();
        assert!(!status.success(), "{name:?} accepted");
        for says in [arg(&tokens), "line 2", name] {
            assert!(
                stderr.contains(says),
                "{name:?}: expected {says:?} in:\n{stderr}"
            );
        }
        assert!(!stderr.contains("token-0123456789"), "{stderr}");
    }
}

#[test]
fn tokens_with_critical_header_extensions_are_refused() {
    let keys = Keys::new();
    let server = metadata_server(&["hash"], &keys, &[]);
    let claims = jwt::claims(ISSUER, RESOURCE, "alice");
    // An extension header member is ignored while it is not critical.
    let plain = jwt::hs256_with_header(SECRET, &json!({"x-ext": 1}), &claims);
    let (_, reply) = server
        .client_with_token(&plain)
        .send("tools/call", sha256_call());
    assert_eq!(reply.status, 200, "{}", reply.text());
    // RFC 7515 §4.1.11: an unknown critical extension, and an empty or
    // malformed `crit`, make the token invalid.
    for crit in [
        json!(["x-ext"]),
        json!(["exp"]),
        json!([]),
        json!("x-ext"),
        json!(null),
    ] {
        let token = jwt::hs256_with_header(SECRET, &json!({"x-ext": 1, "crit": crit}), &claims);
        let what = format!("crit {crit}");
        let challenge = assert_401(&server.client_with_token(&token), &what);
        assert!(
            challenge.contains("error=\"invalid_token\"") && challenge.contains("critical"),
            "{what}: {challenge}"
        );
    }
    server.wait_for_log("critical header");
}

fn raw_get(server: &HttpServer, path: &str, extra_headers: &str) -> airlock_e2e::Reply {
    raw_get_host(server, path, &server.addr(), extra_headers)
}

fn raw_get_host(
    server: &HttpServer,
    path: &str,
    host: &str,
    extra_headers: &str,
) -> airlock_e2e::Reply {
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra_headers}Connection: close\r\n\r\n");
    raw_http(&server.addr(), request.as_bytes())
}

#[test]
fn protected_resource_metadata_is_served_without_a_token() {
    let keys = Keys::new();
    let server = metadata_server(&["hash"], &keys, &["--oauth-scope", "mcp:tools"]);
    let expected = json!({
        "resource": RESOURCE,
        "authorization_servers": [ISSUER],
        "bearer_methods_supported": ["header"],
        "scopes_supported": ["mcp:tools"],
    });
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        let reply = raw_get(&server, path, "");
        assert_eq!(reply.status, 200, "{path}: {}", reply.text());
        assert_eq!(
            reply.media_type().as_deref(),
            Some("application/json"),
            "{path}"
        );
        assert_eq!(reply.json(), expected, "{path}");
    }
    assert_eq!(
        raw_get(&server, "/.well-known/oauth-protected-resource/other", "").status,
        404
    );
    // DNS-rebinding protection applies here too.
    assert_eq!(
        raw_get_host(
            &server,
            "/.well-known/oauth-protected-resource/mcp",
            "evil.example.com",
            ""
        )
        .status,
        403
    );
    // A public document any web page may read: a foreign Origin is no
    // reason to refuse it (the Host check above still applies).
    assert_eq!(
        raw_get(
            &server,
            "/.well-known/oauth-protected-resource/mcp",
            "Origin: http://evil.example.com\r\n"
        )
        .status,
        200
    );
    // The challenge points at the document and names the scope.
    let challenge = assert_401(&server.client(), "no token");
    assert_eq!(
        challenge,
        format!(
            "Bearer realm=\"airlock\", resource_metadata=\"{METADATA_URL}\", scope=\"mcp:tools\""
        )
    );
    // GET on the endpoint (a session's stream) needs a token like any request.
    assert_eq!(server.client().get().status, 401);
}

#[test]
fn no_metadata_document_unless_configured() {
    let server = Airlock::new(&ToolsDir::with(&["hash"])).start_http();
    for path in [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
    ] {
        assert_eq!(raw_get(&server, path, "").status, 404, "{path}");
    }
    assert_eq!(server.client().get().status, 405);
    // Unauthenticated mode says so at start.
    assert!(
        server.stderr().contains("HTTP authentication is off"),
        "{}",
        server.stderr()
    );
}

#[test]
fn incomplete_or_bad_auth_settings_stop_the_start() {
    let keys = Keys::new();
    let short = keys.write("short.secret", "too-short");
    let private = keys.write(
        "private.pem",
        "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n",
    );
    let secret = keys.secret();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["--oauth-authorization-server", ISSUER],
            "need --oauth-resource",
        ),
        (
            vec![
                "--oauth-resource",
                RESOURCE,
                "--oauth-authorization-server",
                ISSUER,
            ],
            "no token is checked",
        ),
        (
            vec![
                "--jwt-hs256-secret-file",
                arg(&secret),
                "--jwt-audience",
                "a",
            ],
            "--jwt-issuer",
        ),
        (
            vec![
                "--jwt-hs256-secret-file",
                arg(&secret),
                "--jwt-issuer",
                ISSUER,
            ],
            "--jwt-audience",
        ),
        (
            vec![
                "--jwt-hs256-secret-file",
                arg(&short),
                "--jwt-issuer",
                ISSUER,
                "--jwt-audience",
                "a",
            ],
            "at least 32 bytes",
        ),
        (
            vec![
                "--jwt-key-file",
                arg(&private),
                "--jwt-issuer",
                ISSUER,
                "--jwt-audience",
                "a",
            ],
            "private key",
        ),
        (
            vec![
                "--oauth-resource",
                "mcp.example.com/mcp",
                "--oauth-authorization-server",
                ISSUER,
            ],
            "absolute",
        ),
    ];
    for (args, says) in cases {
        let (status, stderr) = Airlock::new(&ToolsDir::with(&["hash"]))
            .args(&args)
            .run_expecting_exit();
        assert!(!status.success(), "{args:?} started");
        assert!(
            stderr.contains(says),
            "{args:?}: expected {says:?} in:\n{stderr}"
        );
        assert!(!stderr.contains("MIGHAgEA"), "{stderr}");
    }
}

/// Reads until the peer closes the connection (or resets it); panics if
/// it is still open after `within`, or sends anything. Returns how long
/// that took.
#[track_caller]
fn wait_for_close(stream: &mut TcpStream, within: Duration) -> Duration {
    let start = Instant::now();
    stream.set_read_timeout(Some(within)).unwrap();
    let mut buf = [0u8; 4096];
    match stream.read(&mut buf) {
        Ok(0) => {}
        Ok(n) => panic!(
            "expected the connection to close, got {n} bytes: {}",
            String::from_utf8_lossy(&buf[..n])
        ),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::ConnectionReset | ErrorKind::ConnectionAborted
            ) => {}
        Err(e) => panic!("the connection is still open after {within:?} ({e})"),
    }
    start.elapsed()
}

fn connect(server: &HttpServer) -> TcpStream {
    let stream = TcpStream::connect(server.addr()).expect("connect");
    stream.set_nodelay(true).unwrap();
    stream
}

/// A complete keep-alive `server/discover` request.
fn discover_request(server: &HttpServer) -> Vec<u8> {
    let body = request(json!(1), "server/discover", with_meta(json!({}), no_caps())).to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {PROTOCOL_VERSION}\r\n\
         Mcp-Method: server/discover\r\nContent-Length: {}\r\n\r\n{body}",
        server.addr(),
        body.len()
    )
    .into_bytes()
}

/// Reads one response with a `Content-Length` body; returns its status.
#[track_caller]
fn read_response(stream: &mut TcpStream) -> u16 {
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut data = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&data[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .unwrap_or_else(|| panic!("no content-length in {head}"))
                .trim()
                .parse()
                .unwrap();
            if data.len() >= end + 4 + length {
                let status = head.split_whitespace().nth(1).unwrap();
                return status.parse().unwrap();
            }
        }
        let n = stream.read(&mut buf).expect("read the response");
        assert!(n > 0, "the connection closed mid-response");
        data.extend_from_slice(&buf[..n]);
    }
}

#[test]
fn connections_that_send_no_complete_head_are_closed() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--http-header-timeout", "300ms"])
        .start_http();
    let partials: [&[u8]; 3] = [
        b"",
        b"POST /mcp HT",
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl",
    ];
    for partial in partials {
        let mut stream = connect(&server);
        stream.write_all(partial).unwrap();
        let took = wait_for_close(&mut stream, Duration::from_secs(10));
        assert!(
            took >= Duration::from_millis(250),
            "closed after {took:?}, before the 300 ms timeout ({:?})",
            String::from_utf8_lossy(partial)
        );
    }
    // The server goes on serving.
    let (_, reply) = server
        .client()
        .send("server/discover", with_meta(json!({}), no_caps()));
    assert_eq!(reply.status, 200, "{}", reply.text());
}

#[test]
fn idle_keep_alive_connections_close_after_the_idle_timeout() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--http-header-timeout", "300ms"])
        .args(["--http-idle-timeout", "1500ms"])
        .start_http();
    let mut stream = connect(&server);
    stream.write_all(&discover_request(&server)).unwrap();
    assert_eq!(read_response(&mut stream), 200);
    // Idle for longer than the header timeout: idle time is not header time.
    sleep(Duration::from_millis(700));
    stream.write_all(&discover_request(&server)).unwrap();
    assert_eq!(read_response(&mut stream), 200);
    let took = wait_for_close(&mut stream, Duration::from_secs(20));
    assert!(
        took >= Duration::from_millis(1400),
        "closed after {took:?}, before the 1500 ms idle timeout"
    );
}

#[test]
fn at_the_cap_the_connection_waiting_longest_without_a_request_is_closed_for_a_new_one() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--max-connections", "2"])
        // Silent connections are not closed by their timeout during the test.
        .args(["--http-header-timeout", "120s"])
        .start_http();
    let mut first = connect(&server);
    sleep(Duration::from_millis(100));
    let mut second = connect(&server);
    let mut third = connect(&server);
    third.write_all(&discover_request(&server)).unwrap();
    assert_eq!(read_response(&mut third), 200);
    wait_for_close(&mut first, Duration::from_secs(10));
    second
        .set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 64];
    match second.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("the second connection was closed too: {other:?}"),
    }
    server.wait_for_log("connection limit reached");
}

#[test]
fn connections_beyond_the_cap_wait_while_every_one_has_a_request_in_progress() {
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--max-connections", "2"])
        .start_http();
    // Both slots: requests whose last bytes have not come yet.
    let request = discover_request(&server);
    let (sent, rest) = request.split_at(request.len() - 10);
    let mut busy: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut stream = connect(&server);
            stream.write_all(sent).unwrap();
            stream
        })
        .collect();
    sleep(Duration::from_millis(200));
    let mut third = connect(&server);
    third.write_all(&request).unwrap();
    third
        .set_read_timeout(Some(Duration::from_millis(800)))
        .unwrap();
    let mut buf = [0u8; 64];
    match third.read(&mut buf) {
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
        other => panic!("a third connection was served beyond --max-connections 2: {other:?}"),
    }
    // One request ends: its connection, idle now, is closed for the third.
    busy[0].write_all(rest).unwrap();
    assert_eq!(read_response(&mut busy[0]), 200);
    assert_eq!(read_response(&mut third), 200);
    wait_for_close(&mut busy[0], Duration::from_secs(10));
    server.wait_for_log("connection limit reached");
}

#[test]
fn shutdown_closes_idle_connections_at_once() {
    let mut server = Airlock::new(&ToolsDir::with(&["hash"])).start_http();
    // One connection idle after a request, one that never sent anything;
    // both would stay open for the default timeouts (60 s, 10 s).
    let mut idle = connect(&server);
    idle.write_all(&discover_request(&server)).unwrap();
    assert_eq!(read_response(&mut idle), 200);
    let mut silent = connect(&server);
    sleep(Duration::from_millis(100));
    let start = Instant::now();
    server.terminate();
    let status = server.wait_exit(Duration::from_secs(8));
    assert!(
        status.is_some_and(|s| s.success()),
        "the server did not exit promptly ({status:?}); stderr:\n{}",
        server.stderr()
    );
    assert!(start.elapsed() < Duration::from_secs(8));
    wait_for_close(&mut idle, Duration::from_secs(5));
    wait_for_close(&mut silent, Duration::from_secs(5));
}
