//! The audit trail (`--audit-file`, `--audit-stdout`): one JSON record per
//! security-relevant event, in a hash chain an auditor can verify
//! (`airlock audit verify`).
//!
//! The events: every call and every round ([`request`]: who, through which
//! identity source, what, which component, how it ended, which round, how
//! long, its request and trace ids), task transitions ([`task`]),
//! authentication failures ([`unauthenticated`]), refusals by an access rule
//! ([`refused`]) or a quota, `requestState` refusals, and reloads of the
//! tools directory ([`reloaded`], [`reload_refused`]). Arguments and results are never written:
//! only a keyed digest of the arguments ([`AuditKey::digest_arguments`]).
//!
//! Records are linked and signed by [`chain`], written off the request path
//! by [`writer`], and checked by [`verify`]. The trail exists only when it
//! is written: [`install`] is called once, at start-up; until then every
//! function here is one check of an empty [`OnceLock`].

pub mod chain;
pub mod key;
pub mod verify;
pub mod witness;
pub mod writer;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Map, Value, json};

pub use self::key::AuditKey;
pub use self::writer::{Destination, WriterSettings};

/// Longest client-given string (a name, a URI, a request id) a record
/// holds, in bytes; longer ones are cut at a character boundary.
const MAX_TEXT: usize = 1024;

/// How long the trail may take to be written out when the server stops.
pub const FLUSH_TIMEOUT: Duration = Duration::from_secs(3);

/// What the trail needs to start.
#[derive(Debug, Clone)]
pub struct AuditSettings {
    /// Where it goes, and how it is written.
    pub writer: WriterSettings,
    /// The host id every record carries.
    pub host: String,
    /// The file of the audit key; without it, the key derived from the
    /// state keys.
    pub key_file: Option<PathBuf>,
}

/// The trail of this process, once installed.
struct Trail {
    queue: writer::Queue,
    key: AuditKey,
    /// The SHA-256 of each component file served, as it was loaded.
    digests: Mutex<BTreeMap<PathBuf, String>>,
}

static TRAIL: OnceLock<Trail> = OnceLock::new();

/// Starts the trail: its writer thread and the first record. `state_keys`
/// give the key when no key file is named.
pub fn install(
    settings: &AuditSettings,
    state_keys: &crate::sealing::KeyRing,
) -> anyhow::Result<()> {
    let key = match &settings.key_file {
        Some(file) => AuditKey::read(file)?,
        None => AuditKey::derived(state_keys),
    };
    let queue = writer::start(&settings.writer, settings.host.clone(), key.clone())?;
    tracing::info!(host = %settings.host, key = key.id(), "audit trail on");
    let trail = Trail {
        queue,
        key,
        digests: Mutex::default(),
    };
    if TRAIL.set(trail).is_err() {
        anyhow::bail!("the audit trail is started twice");
    }
    Ok(())
}

/// What `serve --check` checks of the trail's settings: the audit key file
/// reads. Nothing is opened or written.
pub fn check(settings: &AuditSettings) -> anyhow::Result<()> {
    if let Some(file) = &settings.key_file {
        AuditKey::read(file)?;
    }
    Ok(())
}

/// Writes the last checkpoint and flushes the trail, waiting at most
/// [`FLUSH_TIMEOUT`].
pub fn shut_down() {
    if let Some(trail) = TRAIL.get()
        && !trail.queue.finish(FLUSH_TIMEOUT)
    {
        tracing::warn!("the audit trail was not written out within {FLUSH_TIMEOUT:?}");
    }
}

/// This machine's name, the default host id.
pub fn default_host() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .into_owned()
}

/// Queues a record of `event` with `fields`.
fn emit(event: &'static str, mut fields: Map<String, Value>) {
    if let Some(trail) = TRAIL.get() {
        fields.insert("event".into(), json!(event));
        fields.insert("time".into(), json!(now()));
        trail.queue.push(fields);
    }
}

/// What the steps of a request tell its record.
#[derive(Debug, Default)]
struct Notes {
    round: Option<u32>,
    component: Option<PathBuf>,
    state_refused: Option<&'static str>,
    limit: Option<&'static str>,
    refused: Option<(&'static str, String)>,
}

tokio::task_local! {
    static NOTES: RefCell<Notes>;
}

/// Adds to the record of the request being served, if any.
fn note(change: impl FnOnce(&mut Notes)) {
    if TRAIL.get().is_some() {
        let _ = NOTES.try_with(|notes| change(&mut notes.borrow_mut()));
    }
}

/// The methods whose every request is recorded: those that run a
/// component or touch a task. Any other request is recorded when it is
/// refused by a rule or a quota.
fn audited(method: &str) -> bool {
    matches!(
        method,
        "tools/call"
            | "prompts/get"
            | "resources/read"
            | "completion/complete"
            | "tasks/get"
            | "tasks/update"
            | "tasks/cancel"
    )
}

/// A request as its record names it.
pub struct Requested<'a> {
    /// Its method.
    pub method: &'a str,
    /// Its params (only names, URIs and task ids are written, and a keyed
    /// digest of the arguments).
    pub params: &'a Map<String, Value>,
    /// Its JSON-RPC id.
    pub id: &'a Value,
    /// Who sent it.
    pub principal: &'a str,
}

/// How a request ended, as its record says it.
pub trait Settled {
    /// `complete`, `tool_error`, `input_required`, `task` or `error`.
    fn outcome(&self) -> &'static str;
    /// The JSON-RPC error code, if it ended in an error.
    fn error_code(&self) -> Option<i32>;
}

/// A task as its record names it.
pub struct AuditedTask<'a> {
    /// Its id.
    pub id: &'a str,
    /// The principal that owns it.
    pub owner: &'a str,
    /// The tool it calls.
    pub tool: &'a str,
    /// The rounds it has run.
    pub round: u32,
}

/// Serves `request` with the future `work` makes and records how it ended
/// (a maker, not a future: see [`in_request_span`](crate::logging::in_request_span)).
pub async fn request<F, A>(request: Requested<'_>, work: impl FnOnce() -> F) -> A
where
    F: Future<Output = A>,
    A: Settled,
{
    if TRAIL.get().is_none() {
        return work().await;
    }
    NOTES
        .scope(RefCell::default(), async {
            let started = Instant::now();
            let answer = work().await;
            let notes = NOTES.with(|notes| notes.take());
            if audited(request.method) || notes.refused.is_some() {
                emit("call", call_fields(&request, &answer, notes, started));
            }
            answer
        })
        .await
}

/// The members of a call's record.
fn call_fields(
    request: &Requested<'_>,
    answer: &impl Settled,
    notes: Notes,
    started: Instant,
) -> Map<String, Value> {
    let principal = request.principal;
    let mut fields = Map::new();
    fields.insert("principal".into(), json!(bounded(principal)));
    fields.insert("identity".into(), json!(identity(principal)));
    fields.insert("method".into(), json!(bounded(request.method)));
    let target = ["name", "uri"]
        .iter()
        .find_map(|member| request.params.get(*member).and_then(Value::as_str));
    if let Some(target) = target {
        fields.insert("target".into(), json!(bounded(target)));
    }
    if let Some(task) = request.params.get("taskId").and_then(Value::as_str) {
        fields.insert("task".into(), json!(bounded(task)));
    }
    if matches!(request.method, "tools/call" | "prompts/get")
        && let Some(trail) = TRAIL.get()
    {
        let arguments = request.params.get("arguments").unwrap_or(&Value::Null);
        fields.insert(
            "arguments".into(),
            json!(trail.key.digest_arguments(arguments)),
        );
    }
    if let Some(component) = notes.component {
        fields.insert("component".into(), json!(component.display().to_string()));
        if let Some(digest) = loaded_digest(&component) {
            fields.insert("component_sha256".into(), json!(digest));
        }
    }
    if let Some(round) = notes.round {
        fields.insert("round".into(), json!(round));
    }
    let outcome = if notes.refused.is_some() {
        "refused"
    } else if notes.limit.is_some() {
        "limit"
    } else {
        answer.outcome()
    };
    fields.insert("outcome".into(), json!(outcome));
    if let Some(code) = answer.error_code() {
        fields.insert("code".into(), json!(code));
    }
    if let Some((by, what)) = notes.refused {
        fields.insert("refused_by".into(), json!(by));
        fields.insert("rule".into(), json!(bounded(&what)));
    }
    if let Some(limit) = notes.limit {
        fields.insert("limit".into(), json!(limit));
    }
    if let Some(reason) = notes.state_refused {
        fields.insert("state_refused".into(), json!(reason));
    }
    fields.insert(
        "duration_us".into(),
        json!(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX)),
    );
    fields.insert("request_id".into(), request_id(request.id));
    if let Some(trace) = crate::telemetry::current_trace_id() {
        fields.insert("trace_id".into(), json!(trace));
    }
    fields
}

/// Notes the round the request runs (1 for a first round).
pub fn round(number: u32) {
    note(|notes| notes.round = Some(number));
}

/// Notes the component file that serves the request.
pub fn component(file: &Path) {
    note(|notes| notes.component = Some(file.to_path_buf()));
}

/// Notes that the request's `requestState` was refused, and why (the
/// `StateError::reason` word).
pub fn state_refused(reason: &'static str) {
    note(|notes| notes.state_refused = Some(reason));
}

/// Notes that the request hit a limit of the server (`max-rounds`, `busy`).
pub fn limit(which: &'static str) {
    note(|notes| notes.limit = Some(which));
}

/// Records that the request being served was refused by the quota `which`
/// (`rate-limit`, `tool-rate-limit`, `tasks`).
pub fn over_quota(which: &str) {
    note(|notes| notes.refused = Some(("quota", which.to_owned())));
}

/// Records that an access rule refused `principal` what it asked for
/// (`method` on `target`): noted on the record of the request being served,
/// or a record of its own outside one.
pub fn refused(principal: &str, method: &str, target: Option<&str>, rule: &str) {
    refusal(principal, method, target, "rule", rule);
}

/// Records an `initialize` of `principal` refused by the quota `which` on
/// its sessions.
pub fn session_over_quota(principal: &str, which: &str) {
    refusal(principal, "initialize", None, "quota", which);
}

/// Records a refusal `by` a rule or a quota (`what`): on the record of the
/// request being served, or as a record of its own outside one.
fn refusal(principal: &str, method: &str, target: Option<&str>, by: &'static str, what: &str) {
    if TRAIL.get().is_none() {
        return;
    }
    let mut in_request = false;
    note(|notes| {
        notes.refused = Some((by, what.to_owned()));
        in_request = true;
    });
    if !in_request {
        let mut fields = Map::new();
        fields.insert("principal".into(), json!(bounded(principal)));
        fields.insert("identity".into(), json!(identity(principal)));
        fields.insert("method".into(), json!(bounded(method)));
        if let Some(target) = target {
            fields.insert("target".into(), json!(bounded(target)));
        }
        fields.insert("outcome".into(), json!("refused"));
        fields.insert("refused_by".into(), json!(by));
        fields.insert("rule".into(), json!(bounded(what)));
        emit("call", fields);
    }
}

/// Records a request refused for want of valid credentials (a 401):
/// `reason` says which check failed, never what the client sent.
pub fn unauthenticated(reason: &'static str) {
    let mut fields = Map::new();
    fields.insert("reason".into(), json!(reason));
    emit("unauthenticated", fields);
}

/// Records a change of a task: `change` is `created`, `cancelled`,
/// `handed_back`, or the status a round left it in (`working`,
/// `input_required`, `completed`, `failed`).
pub fn task(record: AuditedTask<'_>, change: &'static str) {
    if TRAIL.get().is_none() {
        return;
    }
    let mut fields = Map::new();
    fields.insert("task".into(), json!(bounded(record.id)));
    fields.insert("principal".into(), json!(bounded(record.owner)));
    fields.insert("identity".into(), json!(identity(record.owner)));
    fields.insert("target".into(), json!(bounded(record.tool)));
    fields.insert("change".into(), json!(change));
    fields.insert("round".into(), json!(record.round));
    emit("task", fields);
}

/// Remembers the digest of every component file loaded at start-up (the
/// registry's files), for the records of the calls they serve.
pub fn loaded<S>(files: &[(PathBuf, Option<S>)]) {
    let Some(trail) = TRAIL.get() else {
        return;
    };
    let mut digests = trail.digests.lock().unwrap_or_else(PoisonError::into_inner);
    for (file, _) in files {
        if let Some(digest) = file_digest(file) {
            digests.insert(file.clone(), digest);
        }
    }
}

/// Records a reload of the tools directory from the `old` files (with their
/// stamps) to the `new`: each component file added, replaced (with its old
/// and new digest) or removed.
pub fn reloaded<S: PartialEq>(old: &[(PathBuf, Option<S>)], new: &[(PathBuf, Option<S>)]) {
    let Some(trail) = TRAIL.get() else {
        return;
    };
    fn stamps<S>(files: &[(PathBuf, Option<S>)]) -> BTreeMap<&Path, &Option<S>> {
        files
            .iter()
            .map(|(file, stamp)| (file.as_path(), stamp))
            .collect()
    }
    let (before, after) = (stamps(old), stamps(new));
    let mut digests = trail.digests.lock().unwrap_or_else(PoisonError::into_inner);
    let (mut added, mut replaced, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for (file, stamp) in &after {
        match before.get(file) {
            Some(old_stamp) if old_stamp == stamp => continue,
            Some(_) => {
                let old_digest = digests.get(*file).cloned();
                let new_digest = file_digest(file);
                replaced.push(json!({"file": file.display().to_string(), "old_sha256": old_digest, "sha256": new_digest}));
                if let Some(digest) = new_digest {
                    digests.insert(file.to_path_buf(), digest);
                }
            }
            None => {
                let digest = file_digest(file);
                added.push(json!({"file": file.display().to_string(), "sha256": digest}));
                if let Some(digest) = digest {
                    digests.insert(file.to_path_buf(), digest);
                }
            }
        }
    }
    for file in before.keys().filter(|file| !after.contains_key(*file)) {
        let digest = digests.remove(*file);
        removed.push(json!({"file": file.display().to_string(), "sha256": digest}));
    }
    drop(digests);
    let mut fields = Map::new();
    fields.insert("outcome".into(), json!("reloaded"));
    fields.insert("added".into(), Value::Array(added));
    fields.insert("replaced".into(), Value::Array(replaced));
    fields.insert("removed".into(), Value::Array(removed));
    emit("reload", fields);
}

/// Records a reload of the tools directory that was refused (the previous
/// set is served on), and why.
pub fn reload_refused(why: &str) {
    let mut fields = Map::new();
    fields.insert("outcome".into(), json!("refused"));
    fields.insert("error".into(), json!(bounded(why)));
    emit("reload", fields);
}

/// SHA-256 of a file's bytes, in hex, if it can be read.
fn file_digest(file: &Path) -> Option<String> {
    let bytes = std::fs::read(file).ok()?;
    Some(crate::hex::encode(
        ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref(),
    ))
}

/// The digest of `file` as it was when it was last loaded.
fn loaded_digest(file: &Path) -> Option<String> {
    let trail = TRAIL.get()?;
    let digests = trail.digests.lock().unwrap_or_else(PoisonError::into_inner);
    digests.get(file).cloned()
}

/// Where a principal's identity comes from, by its prefix (see
/// [`crate::auth`]).
fn identity(principal: &str) -> &'static str {
    if principal.starts_with(crate::access::TOKEN_PRINCIPAL_PREFIX) {
        "token"
    } else if principal.starts_with(crate::access::JWT_PRINCIPAL_PREFIX) {
        "jwt"
    } else if principal == crate::access::STDIO {
        "stdio"
    } else {
        "anonymous"
    }
}

/// A request id as the record keeps it: a number or a bounded string.
fn request_id(id: &Value) -> Value {
    match id {
        Value::String(text) => json!(bounded(text)),
        Value::Number(_) | Value::Null => id.clone(),
        other => json!(bounded(&other.to_string())),
    }
}

/// `text` cut to at most [`MAX_TEXT`] bytes, at a character boundary.
fn bounded(text: &str) -> &str {
    let mut end = text.len().min(MAX_TEXT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Now, as records write it (RFC 3339, UTC, milliseconds).
fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// Lowercase or uppercase hex as bytes, if it is hex.
fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(text.get(at..at + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a record of a test request says it ended with.
    struct Done;

    impl Settled for Done {
        fn outcome(&self) -> &'static str {
            "complete"
        }
        fn error_code(&self) -> Option<i32> {
            None
        }
    }

    #[test]
    fn the_record_holds_the_request_once() {
        let (params, id) = (Map::new(), json!(1));
        let requested = Requested {
            method: "tools/call",
            params: &params,
            id: &id,
            principal: "anonymous",
        };
        let recorded = request(requested, || crate::held_once::four_kib(Done));
        crate::held_once::assert_held_once(&recorded);
    }

    #[test]
    fn identity_comes_from_the_principals_prefix() {
        assert_eq!(identity("token:alice"), "token");
        assert_eq!(identity("jwt:https://issuer#bob"), "jwt");
        assert_eq!(identity("stdio"), "stdio");
        assert_eq!(identity("anonymous"), "anonymous");
    }

    #[test]
    fn client_strings_are_bounded() {
        let long = "é".repeat(MAX_TEXT);
        assert!(bounded(&long).len() <= MAX_TEXT);
        assert_eq!(request_id(&json!(7)), json!(7));
        assert_eq!(request_id(&json!({"a": 1})), json!(r#"{"a":1}"#));
    }

    /// An ending with the outcome and code given.
    struct Ended(&'static str, Option<i32>);

    impl Settled for Ended {
        fn outcome(&self) -> &'static str {
            self.0
        }
        fn error_code(&self) -> Option<i32> {
            self.1
        }
    }

    #[test]
    fn a_calls_record_says_how_it_ended_and_never_what_it_carried() {
        let Value::Object(params) = json!({"name": "echo", "arguments": {"text": "SECRET"}}) else {
            unreachable!()
        };
        let id = json!("r-1");
        let request = |principal| Requested {
            method: "tools/call",
            params: &params,
            id: &id,
            principal,
        };
        let notes = Notes {
            round: Some(2),
            component: Some(PathBuf::from("/tools/echo.wasm")),
            ..Notes::default()
        };
        let fields = call_fields(
            &request("jwt:iss#sub"),
            &Ended("complete", None),
            notes,
            Instant::now(),
        );
        assert_eq!(fields["outcome"], "complete");
        assert_eq!(fields["identity"], "jwt");
        assert_eq!(fields["round"], 2);
        assert_eq!(fields["target"], "echo");
        assert_eq!(fields["component"], "/tools/echo.wasm");
        assert_eq!(fields["request_id"], "r-1");
        assert!(fields.get("code").is_none());
        assert!(!Value::Object(fields).to_string().contains("SECRET"));

        let refused = Notes {
            refused: Some(("quota", "rate-limit".into())),
            ..Notes::default()
        };
        let over = Ended("error", Some(-31429));
        let fields = call_fields(&request("anonymous"), &over, refused, Instant::now());
        assert_eq!(
            (
                &fields["outcome"],
                &fields["refused_by"],
                &fields["rule"],
                &fields["code"]
            ),
            (
                &json!("refused"),
                &json!("quota"),
                &json!("rate-limit"),
                &json!(-31429)
            )
        );

        let state = Notes {
            state_refused: Some("forged"),
            ..Notes::default()
        };
        let invalid = Ended("error", Some(-32602));
        let fields = call_fields(&request("stdio"), &invalid, state, Instant::now());
        assert_eq!(fields["outcome"], "error");
        assert_eq!(fields["state_refused"], "forged");
        assert_eq!(fields["code"], -32602);
        let limited = Notes {
            limit: Some("max-rounds"),
            ..Notes::default()
        };
        let fields = call_fields(&request("stdio"), &invalid, limited, Instant::now());
        assert_eq!(
            (&fields["outcome"], &fields["limit"]),
            (&json!("limit"), &json!("max-rounds"))
        );
    }

    #[test]
    fn unhex_reads_hex_of_either_case() {
        assert_eq!(unhex("000fff"), Some(vec![0, 15, 255]));
        assert_eq!(unhex("00AB"), Some(vec![0, 0xab]));
        assert_eq!(unhex("0g"), None);
        assert_eq!(unhex("abc"), None);
    }
}
