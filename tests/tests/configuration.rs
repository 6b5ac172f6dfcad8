//! Where settings come from (command line, environment, `--config` file),
//! and values refused before anything loads.

use std::io::Write as _;

use airlock_e2e::mcp::{complete, no_caps, with_meta};
use airlock_e2e::{Airlock, HttpServer, ToolsDir};
use serde_json::json;

/// Whether the server accepts a `tools/call` whose body is about `kib` KiB:
/// served (200) or refused by the body limit (413).
#[track_caller]
fn accepts_body_of(server: &HttpServer, kib: usize) -> bool {
    let params = with_meta(
        json!({"name": "sha256", "arguments": {"text": "a".repeat(kib * 1024)}}),
        no_caps(),
    );
    let (_, reply) = server.client().send("tools/call", params);
    match reply.status {
        200 => {
            complete(&reply.json());
            true
        }
        413 => false,
        other => panic!("expected 200 or 413, got {other}: {}", reply.text()),
    }
}

#[test]
fn a_flag_beats_the_environment_which_beats_the_file() {
    let tools = ToolsDir::with(&["hash"]);
    let mut file = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("a configuration file");
    file.write_all(b"max-body = \"2KiB\"\n").unwrap();

    // The file over the default (4MiB).
    let server = Airlock::new(&tools)
        .arg("--config")
        .arg(file.path())
        .start_http();
    assert!(accepts_body_of(&server, 1));
    assert!(!accepts_body_of(&server, 3), "the file's 2KiB must apply");
    drop(server);

    // The environment over the file (named by its own variable here).
    let server = Airlock::new(&tools)
        .env("AIRLOCK_CONFIG", file.path())
        .env("AIRLOCK_MAX_BODY", "8KiB")
        .start_http();
    assert!(
        accepts_body_of(&server, 3),
        "the environment's 8KiB must apply"
    );
    assert!(!accepts_body_of(&server, 12));
    drop(server);

    // The command line over both.
    let server = Airlock::new(&tools)
        .env("AIRLOCK_CONFIG", file.path())
        .env("AIRLOCK_MAX_BODY", "8KiB")
        .args(["--max-body", "16KiB"])
        .start_http();
    assert!(accepts_body_of(&server, 12), "the flag's 16KiB must apply");
    assert!(!accepts_body_of(&server, 20));
}

#[test]
fn a_bad_value_stops_airlock_before_anything_loads() {
    let tools = ToolsDir::with(&["hash"]);
    for (args, names) in [
        (
            &["--allowed-origin", "app.example.com"][..],
            "--allowed-origin",
        ),
        (&["--call-timeout", "10"], "--call-timeout"),
    ] {
        let (status, stderr) = Airlock::new(&tools).args(args).run_expecting_exit();
        assert_eq!(status.code(), Some(2), "a usage error: {stderr}");
        assert!(stderr.contains(names), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("loaded component"),
            "{args:?} must be refused before the tools load: {stderr}"
        );
    }
}

#[test]
fn a_bad_configuration_file_names_itself_and_the_key() {
    let tools = ToolsDir::with(&["hash"]);
    let mut file = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("a configuration file");
    file.write_all(b"max-memory = 64\n").unwrap();
    let (status, stderr) = Airlock::new(&tools)
        .arg("--config")
        .arg(file.path())
        .run_expecting_exit();
    assert_eq!(status.code(), Some(2), "{stderr}");
    let file_name = file.path().to_string_lossy();
    assert!(
        stderr.contains(&*file_name)
            && stderr.contains("`max-memory`")
            && stderr.contains("no unit"),
        "{stderr}"
    );
    assert!(!stderr.contains("loaded component"), "{stderr}");
}

#[test]
fn check_loads_everything_reports_and_exits_without_serving() {
    let tools = ToolsDir::with(&["hash"]);
    let (status, stderr) = Airlock::new(&tools).arg("--check").run_expecting_exit();
    assert!(status.success(), "{status}: {stderr}");
    assert!(
        stderr.contains("check passed: 1 components in") && stderr.contains(": 1 tools,"),
        "{stderr}"
    );

    // A component that would be skipped fails the check, and the log says why.
    tools.add_bytes("broken.wasm", b"not a component");
    let (status, stderr) = Airlock::new(&tools).arg("--check").run_expecting_exit();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("broken.wasm"), "{stderr}");
    assert!(
        stderr.contains("1 of the 2 components in") && !stderr.contains("check passed"),
        "{stderr}"
    );
}

#[test]
fn check_fails_on_a_key_file_it_cannot_read() {
    let tools = ToolsDir::with(&["hash"]);
    let missing = tools.path().join("no-such-keys");
    let (status, stderr) = Airlock::new(&tools)
        .arg("--check")
        .arg("--state-keys-file")
        .arg(&missing)
        .run_expecting_exit();
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("no-such-keys"), "{stderr}");
    assert!(!stderr.contains("check passed"), "{stderr}");
}

#[test]
fn a_misspelt_variable_fails_the_check_and_is_warned_of_at_serve() {
    let tools = ToolsDir::with(&["hash"]);
    let (status, stderr) = Airlock::new(&tools)
        .env("AIRLOCK_CALL_TIMOUT", "1s")
        .env("AIRLOCK_MAX_BODDY", "1MiB")
        .arg("--check")
        .run_expecting_exit();
    assert_eq!(status.code(), Some(1), "{stderr}");
    for variable in ["AIRLOCK_CALL_TIMOUT", "AIRLOCK_MAX_BODDY"] {
        assert!(
            stderr.contains(&format!("error: {variable} names no option")),
            "each misspelt variable is named on a line of its own:\n{stderr}"
        );
    }

    // The log filter is read from the environment too, and is no typo.
    let server = Airlock::new(&tools)
        .env("AIRLOCK_CALL_TIMOUT", "1s")
        .env("AIRLOCK_LOG", "info")
        .start_http();
    server.wait_for_log("AIRLOCK_CALL_TIMOUT names no option and is ignored");
    assert!(
        !server.stderr().contains("AIRLOCK_LOG names"),
        "{}",
        server.stderr()
    );
}
