//! The audit trail end to end: a server with a tokens file writes one record
//! per call, round, task change, authentication failure, state refusal and
//! reload, never an argument or a result; `airlock audit verify` finds the
//! rotated files whole and a removed line a break; the JSON server log
//! carries each request's id.

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use airlock_e2e::legacy::{Endpoint, legacy_caps};
use airlock_e2e::mcp::{ToolCall, all_caps, complete, text};
use airlock_e2e::oci_registry::OciRegistry;
use airlock_e2e::paths::component;
use airlock_e2e::{
    Airlock, HttpServer, McpClient, OtlpReceiver, ToolsDir, run_airlock, wait_until,
};
use serde_json::{Value, json};
use tempfile::TempDir;

/// Put in arguments (and so echoed in results): it must appear in no record.
const MARKER: &str = "MARKER-c0ffee-7f3a";
const TOKEN: &str = "alice-token-0123456789abcdef";

fn arg(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 temporary path")
}

/// A state key file, made by `airlock keygen`.
fn state_keys(dir: &Path) -> PathBuf {
    let (status, stdout, stderr) = run_airlock(&["keygen"]);
    assert!(status.success(), "keygen: {stderr}");
    let path = dir.join("state.keys");
    std::fs::write(&path, stdout).unwrap();
    path
}

/// The audit files of `file`, oldest first (`FILE.N` … `FILE.1`, `FILE`).
fn audit_files(file: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = (1..=1000)
        .rev()
        .map(|n| PathBuf::from(format!("{}.{n}", file.display())))
        .filter(|path| path.exists())
        .collect();
    files.push(file.to_path_buf());
    files
}

/// Every record of `files`, in order.
fn records(files: &[PathBuf]) -> Vec<Value> {
    files
        .iter()
        .flat_map(|file| {
            std::fs::read_to_string(file)
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).expect("a JSON record"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `airlock audit verify` over `files` with the state keys: whether it
/// found them whole, and its report.
fn verify(keys: &Path, files: &[PathBuf]) -> (bool, String) {
    let (code, report) = verify_with(keys, files, &[]);
    (code == Some(0), report)
}

/// `airlock audit verify` over `files` with the state keys and `options`:
/// its exit code and its report.
fn verify_with(keys: &Path, files: &[PathBuf], options: &[&str]) -> (Option<i32>, String) {
    let mut args = vec!["audit", "verify", "--state-keys-file", arg(keys)];
    args.extend(options);
    args.extend(files.iter().map(|file| arg(file)));
    let (status, stdout, stderr) = run_airlock(&args);
    (status.code(), format!("{stdout}{stderr}"))
}

fn tasks_caps() -> Value {
    let mut caps = all_caps();
    caps["extensions"] = json!({ "io.modelcontextprotocol/tasks": {} });
    caps
}

#[track_caller]
fn find<'a>(records: &'a [Value], what: &str, matches: impl Fn(&Value) -> bool) -> &'a Value {
    records
        .iter()
        .find(|record| matches(record))
        .unwrap_or_else(|| panic!("no record of {what} in {records:#?}"))
}

#[test]
fn a_run_leaves_a_whole_trail_with_no_argument_or_result() {
    let dir = TempDir::new().unwrap();
    let keys = state_keys(dir.path());
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} alice\n")).unwrap();
    let trail = dir.path().join("audit.jsonl");
    let tools = ToolsDir::with(&["everything"]);
    let mut server = Airlock::new(&tools)
        .args(["--tokens-file", arg(&tokens)])
        .args(["--state-keys-file", arg(&keys)])
        .args(["--audit-file", arg(&trail)])
        .args(["--audit-max-file-size", "4KiB", "--audit-keep", "1000"])
        .args(["--audit-checkpoint-every", "4"])
        .start_http();
    let alice = server.client_with_token(TOKEN);

    // A call, whose result echoes the marker.
    let greeted = alice.call(&ToolCall::new("greet", json!({"name": MARKER})));
    assert!(text(complete(&greeted)).contains(MARKER), "{greeted}");
    // A state refusal.
    let forged = alice.call(&ToolCall::new("greet", json!({"name": MARKER})).state("forged"));
    assert!(forged.get("error").is_some(), "{forged}");
    // A 401.
    let (_, refused) = server.client().send(
        "tools/call",
        ToolCall::new("greet", json!({"name": MARKER})).params(),
    );
    assert_eq!(refused.status, 401, "{}", refused.text());
    // A task, to its end.
    let created = alice.call(
        &ToolCall::new("slow_compute", json!({"seconds": 1, "label": MARKER})).caps(tasks_caps()),
    );
    let task = created["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task: {created}"))
        .to_owned();
    wait_until("the task to complete", || {
        let got = alice.rpc("tasks/get", json!({"taskId": task}), tasks_caps());
        match complete(&got)["status"].as_str() {
            Some("completed") => Ok(()),
            _ => Err(got.to_string()),
        }
    });
    // A 2025-era session's call.
    let session = Endpoint::new(server.url())
        .with_bearer(TOKEN)
        .open(legacy_caps());
    let result = session.result(
        "tools/call",
        json!({"name": "greet", "arguments": {"name": MARKER}}),
    );
    assert!(result.to_string().contains(MARKER), "{result}");
    // A reload.
    tools.add("hash");
    server.wait_for_log("reloaded");
    server.terminate();
    assert!(
        server.wait_exit(Duration::from_secs(30)).is_some(),
        "the server exits"
    );

    let files = audit_files(&trail);
    assert!(files.len() >= 2, "the trail was rotated: {files:?}");
    for file in &files {
        let written = std::fs::read_to_string(file).unwrap();
        assert!(
            !written.contains(MARKER),
            "an argument or result in {}: {written}",
            file.display()
        );
    }
    let records = records(&files);
    let call = find(&records, "the call", |r| {
        r["event"] == "call" && r["target"] == "greet" && r["outcome"] == "complete"
    });
    assert_eq!(call["principal"], "token:alice");
    assert_eq!(call["identity"], "token");
    assert_eq!(call["round"], 1);
    assert!(
        call["component"]
            .as_str()
            .unwrap()
            .ends_with("everything.wasm")
    );
    assert_eq!(call["component_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(call["arguments"].as_str().map(str::len), Some(64));
    assert!(call["request_id"].is_number() || call["request_id"].is_string());
    assert!(call["duration_us"].is_u64());
    find(&records, "the state refusal", |r| {
        r["event"] == "call" && r["state_refused"].is_string() && r["outcome"] == "error"
    });
    find(&records, "the 401", |r| r["event"] == "unauthenticated");
    let calls_of_greet = records
        .iter()
        .filter(|r| r["event"] == "call" && r["target"] == "greet" && r["outcome"] == "complete")
        .count();
    assert_eq!(calls_of_greet, 2, "the plain call and the session's");
    for change in ["created", "completed"] {
        find(&records, &format!("the task {change}"), |r| {
            r["event"] == "task" && r["task"] == task.as_str() && r["change"] == change
        });
    }
    let reload = find(&records, "the reload", |r| r["event"] == "reload");
    assert!(
        reload["added"].to_string().contains("hash.wasm"),
        "{reload:?}"
    );
    assert!(
        records.iter().all(|r| r["host"] == records[0]["host"]),
        "one host"
    );
    assert_eq!(records[0]["event"], "start");

    let (whole, report) = verify(&keys, &files);
    assert!(whole, "{report}");
    assert!(report.contains("whole"), "{report}");

    // Given newest first, the newer files go on from older ones given after
    // them: a break, not a new chain.
    let newest_first: Vec<PathBuf> = files.iter().rev().cloned().collect();
    let (whole, report) = verify(&keys, &newest_first);
    assert!(!whole, "{report}");
    assert!(
        report.contains(&format!(
            "{}:1: out of order: it goes on from",
            newest_first[0].display()
        )),
        "{report}"
    );

    // A line removed from the middle is a break, with its file and line.
    let middle = files.last().unwrap();
    let text = std::fs::read_to_string(middle).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 3, "{text}");
    lines.remove(1);
    std::fs::write(middle, lines.join("\n") + "\n").unwrap();
    let (whole, report) = verify(&keys, &files);
    assert!(!whole, "{report}");
    assert!(
        report.contains(&format!("{}:2: sequence gap", middle.display())),
        "{report}"
    );
}

#[test]
fn the_audit_trail_goes_to_stdout_only_over_http() {
    let (status, _, stderr) = run_airlock(&["serve", "--stdio", "--audit-stdout"]);
    assert!(!status.success());
    assert!(
        stderr.contains("cannot be used with") && stderr.contains("--audit-stdout"),
        "{stderr}"
    );
}

#[test]
fn json_log_lines_carry_their_request_id() {
    let server = Airlock::new(&ToolsDir::with(&["everything"]))
        .args(["--log-format", "json"])
        .env("AIRLOCK_LOG", "airlock=debug")
        .start_http();
    let client = server.client();
    let greeted = client.call(&ToolCall::new("greet", json!({"name": "json"})));
    complete(&greeted);
    let request_id = match &greeted["id"] {
        Value::String(id) => id.clone(),
        id => id.to_string(),
    };
    let log = wait_until("the round's log line", || {
        let log = server.stderr();
        if log.contains("\"round\"") {
            Ok(log)
        } else {
            Err(log)
        }
    });
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}")))
        .collect();
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["target"].is_string())
    );
    let round = lines
        .iter()
        .find(|l| l["fields"]["message"] == "round")
        .expect("the round's line");
    assert_eq!(round["span"]["request_id"], json!(request_id), "{round}");
}

#[test]
fn audit_records_log_lines_and_spans_share_the_trace_id() {
    let dir = TempDir::new().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let receiver = OtlpReceiver::start();
    let mut server = Airlock::new(&ToolsDir::with(&["everything"]))
        .args(["--otlp-endpoint", receiver.endpoint()])
        .env("OTEL_BSP_SCHEDULE_DELAY", "50")
        .args(["--audit-file", arg(&trail)])
        .args(["--log-format", "json"])
        .env("AIRLOCK_LOG", "airlock=debug")
        .start_http();
    let greeted = server
        .client()
        .call(&ToolCall::new("greet", json!({"name": "traced"})));
    complete(&greeted);
    let span = receiver.wait_for_span("the call's span", |span| span.name == "tools/call greet");
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(30)).is_some());

    let records = records(&audit_files(&trail));
    let call = find(&records, "the call", |r| r["target"] == "greet");
    assert_eq!(call["trace_id"], json!(span.trace_id), "{call}");
    let round = server
        .stderr()
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|line| line["fields"]["message"] == "round")
        .expect("the round's log line");
    assert_eq!(round["span"]["trace_id"], json!(span.trace_id), "{round}");
}

/// The value of `airlock_audit_dropped_total` of a server started with
/// `--metrics-listen`.
fn audit_dropped(server: &HttpServer) -> u64 {
    let text = server.scrape_metrics();
    let line = text
        .lines()
        .find_map(|line| line.strip_prefix("airlock_audit_dropped_total "))
        .unwrap_or_else(|| panic!("no airlock_audit_dropped_total in:\n{text}"));
    line.trim().parse().expect("a count")
}

#[test]
fn a_stalled_trail_blocks_no_call_and_says_what_it_lost() {
    // The trail goes to standard output, a pipe the test does not read yet:
    // a log collector that stopped reading. Once the pipe is full the writer
    // waits on it, its queue of 4 fills, and records are lost.
    let dir = TempDir::new().unwrap();
    let keys = state_keys(dir.path());
    let (mut server, stdout) = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--audit-stdout", "--audit-queue", "4"])
        .args(["--state-keys-file", arg(&keys)])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start_http_keeping_stdout();
    let client = server.client();
    let call = |n: usize| {
        let reply = client.call(&ToolCall::new(
            "sha256",
            json!({"text": format!("call {n}")}),
        ));
        complete(&reply);
    };
    // Every call answers while the trail is stalled (each within the HTTP
    // client's timeout); a pipe holds at most a few hundred calls' records.
    let mut calls = 0;
    while audit_dropped(&server) == 0 {
        assert!(calls < 20_000, "no record was lost after {calls} calls");
        for _ in 0..50 {
            call(calls);
            calls += 1;
        }
    }

    // The collector reads again: the writer moves on and says what it lost.
    let reader = std::thread::spawn(move || {
        std::io::read_to_string(stdout).expect("read the trail from stdout")
    });
    call(calls);
    let dropped = audit_dropped(&server);
    server.terminate();
    assert!(
        server.wait_exit(Duration::from_secs(30)).is_some(),
        "the server stops"
    );
    let trail = reader.join().unwrap();
    let lost: u64 = trail
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON record"))
        .filter(|record| record["event"] == "gap")
        .map(|gap| gap["lost"].as_u64().expect("a gap says how many"))
        .sum();
    assert_eq!(
        lost, dropped,
        "the gap records account for every record lost"
    );
    let file = dir.path().join("stdout.jsonl");
    std::fs::write(&file, &trail).unwrap();
    let (whole, report) = verify(&keys, &[file]);
    assert!(whole, "{report}");
    assert!(
        report.contains(&format!("{dropped} records lost (gap records)")),
        "{report}"
    );
}

/// A file system of the test's own, `bytes` large (a tmpfs), unmounted
/// when dropped: a disk the test fills and frees. Mounting needs root, as
/// CI runs.
struct SmallDisk {
    dir: TempDir,
}

impl SmallDisk {
    fn mount(bytes: u64) -> SmallDisk {
        let dir = TempDir::new().unwrap();
        let status = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={bytes}"),
                "airlock-test",
            ])
            .arg(dir.path())
            .status()
            .expect("run mount");
        assert!(
            status.success(),
            "cannot mount a tmpfs: this test needs root (CI runs as root)"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the disk with a file, to its last byte.
    fn fill(&self) {
        let mut filler = std::fs::File::create(self.path().join("filler")).unwrap();
        let block = [0u8; 4096];
        loop {
            match filler.write(&block) {
                Ok(0) => break,
                Ok(_) => {}
                Err(error) if error.kind() == std::io::ErrorKind::StorageFull => break,
                Err(error) => panic!("filling the disk: {error}"),
            }
        }
    }

    fn free(&self) {
        std::fs::remove_file(self.path().join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.path()).status();
    }
}

/// The records of the trail `file` whose `event` is `event`.
fn events(file: &Path, event: &str) -> Vec<Value> {
    records(&[file.to_path_buf()])
        .into_iter()
        .filter(|record| record["event"] == event)
        .collect()
}

#[test]
fn a_full_disk_loses_records_counted_once_and_the_trail_stays_whole() {
    let disk = SmallDisk::mount(256 << 10);
    let dir = TempDir::new().unwrap();
    let keys = state_keys(dir.path());
    let trail = disk.path().join("audit.jsonl");
    let server = Airlock::new(&ToolsDir::with(&["hash"]))
        .args(["--audit-file", arg(&trail)])
        .args(["--state-keys-file", arg(&keys)])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .start_http();
    let client = server.client();
    let mut calls = 0;
    let mut call = || {
        let reply = client.call(&ToolCall::new(
            "sha256",
            json!({"text": format!("call {calls}")}),
        ));
        complete(&reply);
        calls += 1;
    };
    for _ in 0..5 {
        call();
    }
    wait_until("the first calls' records", || {
        let written = events(&trail, "call").len();
        if written == 5 {
            Ok(())
        } else {
            Err(format!("{written} written"))
        }
    });

    // The disk fills: every call still answers, and records are lost.
    disk.fill();
    for _ in 0..40 {
        call();
    }
    wait_until("records lost to the full disk", || {
        match audit_dropped(&server) {
            0 => Err("none yet".to_owned()),
            dropped => Ok(dropped),
        }
    });

    // Room again: the next records are written, after a gap record.
    disk.free();
    for _ in 0..5 {
        call();
    }
    let dropped = wait_until("every call written or counted as lost", || {
        let (written, dropped) = (events(&trail, "call").len() as u64, audit_dropped(&server));
        if written + dropped == 50 {
            Ok(dropped)
        } else {
            Err(format!(
                "{written} written, {dropped} counted as lost, of 50"
            ))
        }
    });
    server.terminate();
    let mut server = server;
    assert!(server.wait_exit(Duration::from_secs(30)).is_some());

    // Every line is a whole record (a torn one was cut), and the gap
    // records say exactly what the counter counted.
    let text = std::fs::read_to_string(&trail).unwrap();
    assert!(text.ends_with('\n'), "{text}");
    let lost: u64 = events(&trail, "gap")
        .iter()
        .map(|gap| gap["lost"].as_u64().expect("a gap says how many"))
        .sum();
    assert!(dropped > 0);
    assert_eq!(
        lost, dropped,
        "the gap records tell every record lost:\n{text}"
    );
    assert_eq!(events(&trail, "call").len() as u64 + lost, 50);
    let (code, report) = verify_with(&keys, std::slice::from_ref(&trail), &[]);
    assert_eq!(code, Some(0), "an honest gap, not a break:\n{report}");
    assert!(
        report.contains(&format!("{dropped} records lost (gap records)")),
        "{report}"
    );
}

#[test]
fn a_trail_cut_back_or_put_back_does_not_reach_its_witness() {
    let dir = TempDir::new().unwrap();
    let keys = state_keys(dir.path());
    let trail = dir.path().join("audit.jsonl");
    // The witness, where whoever can write the trail cannot.
    let elsewhere = TempDir::new().unwrap();
    let witness = elsewhere.path().join("witness.json");
    let tools = ToolsDir::with(&["hash"]);
    let serve = |host: &str| {
        Airlock::new(&tools)
            .args(["--audit-file", arg(&trail)])
            .args(["--audit-witness", arg(&witness)])
            .args(["--audit-host-id", host])
            .args(["--state-keys-file", arg(&keys)])
            .args(["--audit-checkpoint-every", "3"])
            .start_http()
    };
    let stop = |mut server: HttpServer| {
        server.terminate();
        assert!(server.wait_exit(Duration::from_secs(30)).is_some());
    };
    let server = serve("h1");
    for n in 0..10 {
        complete(
            &server
                .client()
                .call(&ToolCall::new("sha256", json!({"text": n.to_string()}))),
        );
    }
    stop(server);
    let trail_files = [trail.clone()];
    let with_witness = ["--witness", arg(&witness)];
    let (code, report) = verify_with(&keys, &trail_files, &with_witness);
    assert_eq!(code, Some(0), "{report}");
    assert!(report.contains("reaches its witness"), "{report}");
    let whole = std::fs::read_to_string(&trail).unwrap();

    // Cut back to an earlier checkpoint (or an older copy put back): a good
    // chain, but short of the witnessed head.
    let lines: Vec<&str> = whole.lines().collect();
    let first_checkpoint = lines
        .iter()
        .position(|line| line.contains(r#""event":"checkpoint""#))
        .unwrap();
    let cut = lines[..=first_checkpoint].join("\n") + "\n";
    std::fs::write(&trail, &cut).unwrap();
    let (code, report) = verify_with(&keys, &trail_files, &with_witness);
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("not reached"), "{report}");
    // The host restarted on the cut trail says so in its start record, so
    // the cut shows even once the witness moves on.
    stop(serve("h1"));
    let (code, report) = verify_with(&keys, &trail_files, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(report.contains("behind its witness"), "{report}");
}

#[test]
fn verify_refuses_a_chain_no_checkpoint_signs_and_a_member_given_twice() {
    let dir = TempDir::new().unwrap();
    let keys = state_keys(dir.path());
    let trail = dir.path().join("audit.jsonl");
    let tools = ToolsDir::with(&["hash"]);
    let mut server = Airlock::new(&tools)
        .args(["--audit-file", arg(&trail)])
        .args(["--state-keys-file", arg(&keys)])
        .start_http();
    complete(
        &server
            .client()
            .call(&ToolCall::new("sha256", json!({"text": "a"}))),
    );
    server.terminate();
    assert!(server.wait_exit(Duration::from_secs(30)).is_some());
    let trail_files = [trail.clone()];
    let (code, report) = verify_with(&keys, &trail_files, &[]);
    assert_eq!(code, Some(0), "{report}");
    let whole = std::fs::read_to_string(&trail).unwrap();

    // A second chain under a new host id, with no checkpoint: anyone with
    // the file can write one. It is not proven, unless an unsigned tail is
    // accepted.
    let mut intruder = Airlock::new(&tools)
        .args(["--audit-file", arg(&trail)])
        .args(["--audit-host-id", "intruder"])
        .args(["--state-keys-file", arg(&keys)])
        .start_http();
    complete(
        &intruder
            .client()
            .call(&ToolCall::new("sha256", json!({"text": "x"}))),
    );
    wait_until("the intruder's records", || {
        let text = std::fs::read_to_string(&trail).unwrap();
        if text.matches(r#""host":"intruder""#).count() >= 2 {
            Ok(())
        } else {
            Err(text)
        }
    });
    intruder.kill();
    let (code, report) = verify_with(&keys, &trail_files, &[]);
    assert_eq!(code, Some(3), "{report}");
    assert!(report.contains("NOT PROVEN"), "{report}");
    let (code, report) = verify_with(&keys, &trail_files, &["--allow-unsigned-tail"]);
    assert_eq!(code, Some(0), "{report}");
    assert!(
        report.contains("2 records not signed"),
        "reported all the same: {report}"
    );
    // Without the key, nothing is proven.
    let (status, stdout, _) = run_airlock(&["audit", "verify", arg(&trail)]);
    assert_eq!(status.code(), Some(3), "{stdout}");
    assert!(stdout.contains("nothing is proven"), "{stdout}");

    // A member given twice is tampering, even with the hashes intact.
    let doubled = whole.replacen(
        r#""identity":"#,
        r#""principal":"token:mallory","identity":"#,
        1,
    );
    assert_ne!(doubled, whole);
    std::fs::write(&trail, &doubled).unwrap();
    let (code, report) = verify_with(&keys, &trail_files, &[]);
    assert_eq!(code, Some(1), "{report}");
    assert!(
        report.contains("not as the writer encodes records"),
        "{report}"
    );
}

/// Every file under `dir` and its bytes (directories with no bytes).
fn tree(dir: &Path) -> BTreeMap<PathBuf, Option<Vec<u8>>> {
    let mut found = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(path) = pending.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).unwrap() {
                pending.push(entry.unwrap().path());
            }
            found.insert(path, None);
        } else {
            found.insert(path.clone(), Some(std::fs::read(&path).unwrap()));
        }
    }
    found
}

#[test]
fn serve_check_writes_nothing_unless_asked_to_fill_the_compile_cache() {
    // A live host's state: its trail, task store, compile cache and pull
    // cache, all under one directory.
    let state = TempDir::new().unwrap();
    let keys = state_keys(state.path());
    let registry = OciRegistry::start();
    registry.push_component(
        "tools/hash",
        "1",
        &std::fs::read(component("hash")).unwrap(),
    );
    let components = state.path().join("components.toml");
    std::fs::write(
        &components,
        format!("[hash]\nreference = \"{}/tools/hash:1\"\n", registry.host()),
    )
    .unwrap();
    let path = |name: &str| state.path().join(name);
    let tools = ToolsDir::new();
    let configured = || {
        Airlock::new(&tools)
            .with_cache()
            .args(["--state-keys-file", arg(&keys)])
            .args(["--audit-file", arg(&path("audit.jsonl"))])
            .args(["--task-store", arg(&path("tasks.redb"))])
            .args(["--cache-dir", arg(&path("compiled"))])
            .args(["--components", arg(&components)])
            .args(["--pull-cache-dir", arg(&path("pulled"))])
    };
    let mut live = configured().start_http();
    complete(
        &live
            .client()
            .call(&ToolCall::new("sha256", json!({"text": "live"}))),
    );
    live.terminate();
    assert!(live.wait_exit(Duration::from_secs(30)).is_some());
    for made in ["audit.jsonl", "tasks.redb", "compiled", "pulled"] {
        assert!(path(made).exists(), "the live run made {made}");
    }

    // The tag moves: a check pulls and compiles a component the caches do
    // not hold.
    registry.push_component(
        "tools/hash",
        "1",
        &std::fs::read(component("everything")).unwrap(),
    );
    let before = tree(state.path());
    let (status, stderr) = configured().arg("--check").run_expecting_exit();
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("check passed"), "{stderr}");
    let after = tree(state.path());
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|file| before.get(*file) != after.get(*file))
        .collect();
    assert!(changed.is_empty(), "the check wrote {changed:?}");
    let (whole, report) = verify(&keys, &[path("audit.jsonl")]);
    assert!(whole, "{report}");

    // Asked to, it fills the compile cache, and writes nothing else.
    let artifacts = |tree: &BTreeMap<PathBuf, Option<Vec<u8>>>| {
        tree.keys()
            .filter(|file| file.extension().is_some_and(|ext| ext == "cwasm"))
            .count()
    };
    let (status, stderr) = configured()
        .args(["--check", "--fill-cache"])
        .run_expecting_exit();
    assert!(status.success(), "{stderr}");
    let filled = tree(state.path());
    assert!(
        artifacts(&filled) > artifacts(&after),
        "{:?}",
        filled.keys().collect::<Vec<_>>()
    );
    let elsewhere: Vec<&PathBuf> = after
        .keys()
        .chain(filled.keys())
        .filter(|file| !file.starts_with(path("compiled")))
        .filter(|file| after.get(*file) != filled.get(*file))
        .collect();
    assert!(elsewhere.is_empty(), "the check wrote {elsewhere:?}");
}
