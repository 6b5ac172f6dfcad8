//! Test-only guest for Airlock's adversarial tests: every tool tries to
//! get out of the sandbox or to exhaust one of its limits. Never deploy it.
//!
//! - Escapes: `read_file`, `write_file`, `list_dir` (files), `env`,
//!   `env_all` (environment), `connect` (TCP sockets), `resolve` (name
//!   lookups), `http_get` (outbound `wasi:http`).
//! - Exhaustion: `spin` (CPU), `alloc` (memory), `recurse` (stack),
//!   `huge_output` (output), `malformed` (results the host must refuse),
//!   `sleep` (wall-clock time without CPU).
//! - Host resources: `hoard` (pollables, HTTP header fields or open files,
//!   kept until the call ends).
//! - Output shapes that are small in the guest and large on the wire:
//!   `wide_output` (tools), the prompt `wide_prompt`, the resource template
//!   `wide://{count}` and completions of `wide_prompt`'s argument.
//! - Grants: `swap` renames a directory away and leaves a symbolic link in
//!   its place, for a later call (or another component) to follow.
//!
//! Escape tools report what happened as plain text and never set
//! `isError` themselves: `ok: …` when the operation succeeded,
//! `error: …` with the error the guest saw when it was refused. An
//! `isError` result therefore always comes from the host (a limit).

use std::hint::black_box;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use airlock_guest::types::{
    Annotations, ContentBlock, ElicitationRequest, FormElicitation, InputRequest, Role, TextContent,
};
use airlock_guest::{
    Call, CallResult, Completion, CompletionRequest, Completions, Error, InputRequired, Outcome,
    Prompt, PromptOutcome, PromptRequest, PromptResult, Prompts, ReadOutcome, ResourceContents,
    ResourceRead, ResourceTemplate, Resources, Tool, Tools, json,
};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wasip2::filesystem::preopens::get_directories;
use wasip2::http::outgoing_handler;
use wasip2::http::types::{ErrorCode, Fields, Method, OutgoingRequest, Scheme};

struct Hostile;

/// A tool taking these properties (a JSON Schema `properties` object), of
/// which `required` must be given.
fn tool(
    name: &str,
    description: &str,
    properties: airlock_guest::serde_json::Value,
    required: &[&str],
) -> Tool {
    Tool::new(name, description).input_schema(json!({
        "type": "object",
        "properties": properties,
        "required": required
    }))
}

impl Tools for Hostile {
    fn list() -> Vec<Tool> {
        let string = json!({ "type": "string" });
        let count = json!({ "type": "integer", "minimum": 0 });
        vec![
            tool(
                "read_file",
                "Reads a file as text.",
                json!({ "path": string }),
                &["path"],
            ),
            tool(
                "write_file",
                "Writes `text` to a file, creating or truncating it.",
                json!({ "path": string, "text": string }),
                &["path", "text"],
            ),
            tool(
                "list_dir",
                "Lists the names in a directory, sorted, comma-separated.",
                json!({ "path": string }),
                &["path"],
            ),
            tool(
                "env",
                "Reads one environment variable.",
                json!({ "name": string }),
                &["name"],
            ),
            tool(
                "env_all",
                "Lists the name of every environment variable, sorted, comma-separated.",
                json!({}),
                &[],
            ),
            tool(
                "connect",
                "Opens a TCP connection to `addr` (host:port).",
                json!({ "addr": string }),
                &["addr"],
            ),
            tool(
                "resolve",
                "Looks up the addresses of a host name.",
                json!({ "host": string }),
                &["host"],
            ),
            tool(
                "http_get",
                "Sends GET `url` with wasi:http; returns `status <code>` or the error code.",
                json!({ "url": string }),
                &["url"],
            ),
            tool(
                "recurse",
                "Recurses `depth` calls deep (a huge depth overflows the stack).",
                json!({ "depth": count }),
                &["depth"],
            ),
            tool(
                "spin",
                "Busy-loops `ms` milliseconds, or forever without `ms`.",
                json!({ "ms": count }),
                &[],
            ),
            tool(
                "alloc",
                "Allocates and touches `mib` MiB of memory.",
                json!({ "mib": count }),
                &["mib"],
            ),
            tool(
                "huge_output",
                "Returns a text block of `kib` KiB.",
                json!({ "kib": count }),
                &["kib"],
            ),
            tool(
                "malformed",
                "Returns an outcome of `kind`: `structured` (invalid structured JSON, the default), \
                 `empty_input` (input_required asking for nothing), `bad_schema` (a form whose \
                 schema is not a JSON object) or `valid` (a well-formed result).",
                json!({ "kind": {
                    "type": "string",
                    "enum": ["structured", "empty_input", "bad_schema", "valid"]
                } }),
                &[],
            ),
            tool(
                "sleep",
                "Sleeps `ms` milliseconds without using the CPU.",
                json!({ "ms": count }),
                &["ms"],
            ),
            tool(
                "hoard",
                "Creates `count` host resources of `kind` and keeps them until the call ends: \
                 `pollables` (clock timers), `fields` (HTTP header fields of `kib` KiB each) or \
                 `files` (the file at `path`, opened again and again).",
                json!({
                    "kind": { "type": "string", "enum": ["pollables", "fields", "files"] },
                    "count": count,
                    "kib": count,
                    "path": string
                }),
                &["kind", "count"],
            ),
            tool(
                "wide_output",
                "Returns `count` items of `shape`: `audience` (one text block whose audience \
                 lists `count` roles), `empty_blocks`, `blocks` (of one character), `roots` \
                 (roots requests) or `forms` (form elicitations).",
                json!({
                    "shape": {
                        "type": "string",
                        "enum": ["audience", "empty_blocks", "blocks", "roots", "forms"]
                    },
                    "count": count
                }),
                &["shape", "count"],
            ),
            tool(
                "swap",
                "Renames the directory `path` to `path.moved` and puts a symbolic link to \
                 `target` in its place.",
                json!({ "path": string, "target": string }),
                &["path", "target"],
            ),
        ]
    }

    fn call(call: Call) -> Outcome {
        let result = match call.name() {
            "read_file" => read_file(&call),
            "write_file" => write_file(&call),
            "list_dir" => list_dir(&call),
            "env" => env(&call),
            "env_all" => Ok(env_all()),
            "connect" => connect(&call),
            "resolve" => resolve(&call),
            "http_get" => http_get(&call),
            "recurse" => recurse(&call),
            "spin" => spin(&call),
            "alloc" => alloc(&call),
            "huge_output" => huge_output(&call),
            "malformed" => return malformed(&call).into(),
            "sleep" => sleep(&call),
            "hoard" => hoard(&call),
            "wide_output" => return wide_output(&call).unwrap_or_else(Outcome::from),
            "swap" => swap(&call),
            other => return Outcome::unknown_tool(other),
        };
        match result {
            Ok(text) => Outcome::text(text),
            Err(error) => error.into(),
        }
    }
}

/// `wide_prompt {count}`: `count` messages.
impl Prompts for Hostile {
    fn list() -> Vec<Prompt> {
        vec![
            Prompt::new("wide_prompt", "Renders `count` one-character messages.")
                .required_argument("count", "How many messages"),
        ]
    }

    fn get(request: PromptRequest) -> PromptOutcome {
        let count = request
            .argument("count")
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        (0..count)
            .fold(PromptResult::new(), |result, _| result.user("x"))
            .into()
    }
}

/// `wide://{count}`: `count` text contents.
impl Resources for Hostile {
    fn templates() -> Vec<ResourceTemplate> {
        vec![ResourceTemplate::new("wide://{count}", "wide").description("`count` contents")]
    }

    fn read(read: ResourceRead) -> ReadOutcome {
        let count = read
            .variable("count")
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        let uri = read.uri().to_owned();
        ReadOutcome::Complete(
            (0..count)
                .map(|_| ResourceContents::text(uri.clone(), "x"))
                .collect(),
        )
    }
}

/// Completions of `wide_prompt`'s `count`: 100 values of as many bytes as
/// the typed value says.
impl Completions for Hostile {
    fn complete(request: CompletionRequest) -> Completion {
        let bytes = request.value().parse::<usize>().unwrap_or(0);
        Completion::new((0..100).map(|_| "x".repeat(bytes)))
    }
}

airlock_guest::export! {
    tools: Hostile,
    prompts: Hostile,
    resources: Hostile,
    completions: Hostile,
}

/// The arguments of `call`; bad arguments are an `isError` result.
fn args<T: DeserializeOwned>(call: &Call) -> Result<T, Error> {
    call.args()
}

/// `ok: <what>` or `error: <why>`.
fn report<T, E: std::fmt::Display>(result: Result<T, E>, ok: impl FnOnce(T) -> String) -> String {
    match result {
        Ok(value) => format!("ok: {}", ok(value)),
        Err(error) => format!("error: {error}"),
    }
}

#[derive(Deserialize)]
struct PathArg {
    path: String,
}

fn read_file(call: &Call) -> Result<String, Error> {
    let PathArg { path } = args(call)?;
    Ok(report(std::fs::read_to_string(&path), |text| text))
}

#[derive(Deserialize)]
struct WriteArgs {
    path: String,
    text: String,
}

fn write_file(call: &Call) -> Result<String, Error> {
    let WriteArgs { path, text } = args(call)?;
    Ok(report(std::fs::write(&path, &text), |()| {
        format!("wrote {} bytes", text.len())
    }))
}

fn list_dir(call: &Call) -> Result<String, Error> {
    let PathArg { path } = args(call)?;
    let names = std::fs::read_dir(&path).and_then(|entries| {
        let mut names = entries
            .map(|entry| entry.map(|e| e.file_name().to_string_lossy().into_owned()))
            .collect::<Result<Vec<_>, _>>()?;
        names.sort();
        Ok(names)
    });
    Ok(report(names, |names| names.join(",")))
}

#[derive(Deserialize)]
struct Name {
    name: String,
}

fn env(call: &Call) -> Result<String, Error> {
    let Name { name } = args(call)?;
    Ok(report(std::env::var(&name), |value| value))
}

fn env_all() -> String {
    let mut names: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .collect();
    names.sort();
    format!("ok: {}", names.join(","))
}

#[derive(Deserialize)]
struct Addr {
    addr: String,
}

fn connect(call: &Call) -> Result<String, Error> {
    let Addr { addr } = args(call)?;
    let connected = addr
        .to_socket_addrs()
        .and_then(|mut addrs| {
            addrs
                .next()
                .ok_or_else(|| std::io::Error::other("no address"))
        })
        .and_then(|at| TcpStream::connect_timeout(&at, Duration::from_secs(2)));
    Ok(report(connected, |stream| {
        format!("connected to {:?}", stream.peer_addr().ok())
    }))
}

#[derive(Deserialize)]
struct Host {
    host: String,
}

fn resolve(call: &Call) -> Result<String, Error> {
    let Host { host } = args(call)?;
    let found = (host.as_str(), 80).to_socket_addrs().map(|addrs| {
        addrs
            .map(|addr| addr.ip().to_string())
            .collect::<Vec<_>>()
            .join(",")
    });
    Ok(report(found, |addrs| addrs))
}

#[derive(Deserialize)]
struct Url {
    url: String,
}

/// The WIT name of an `error-code` (e.g. `HTTP-request-denied`), or its
/// debug form for the rarer ones.
fn code_name(code: &ErrorCode) -> String {
    match code {
        ErrorCode::HttpRequestDenied => "HTTP-request-denied".to_owned(),
        ErrorCode::DnsError(_) => "DNS-error".to_owned(),
        ErrorCode::DnsTimeout => "DNS-timeout".to_owned(),
        ErrorCode::DestinationNotFound => "destination-not-found".to_owned(),
        ErrorCode::DestinationUnavailable => "destination-unavailable".to_owned(),
        ErrorCode::DestinationIpProhibited => "destination-IP-prohibited".to_owned(),
        ErrorCode::ConnectionRefused => "connection-refused".to_owned(),
        ErrorCode::ConnectionTimeout => "connection-timeout".to_owned(),
        ErrorCode::HttpRequestUriInvalid => "HTTP-request-URI-invalid".to_owned(),
        ErrorCode::InternalError(detail) => format!("internal-error {detail:?}"),
        other => format!("{other:?}"),
    }
}

fn http_get(call: &Call) -> Result<String, Error> {
    let Url { url } = args(call)?;
    Ok(match get(&url) {
        Ok(status) => format!("status {status}"),
        Err(why) => format!("error: {why}"),
    })
}

/// Sends `GET url`; the response status, or why there is none.
fn get(url: &str) -> Result<u16, String> {
    let (scheme, rest) = match url.split_once("://") {
        Some(("http", rest)) => (Scheme::Http, rest),
        Some(("https", rest)) => (Scheme::Https, rest),
        Some((other, rest)) => (Scheme::Other(other.to_owned()), rest),
        None => return Err(format!("{url:?} is not an absolute URL")),
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => rest.split_at(at),
        None => (rest, "/"),
    };
    let request = OutgoingRequest::new(Fields::new());
    request
        .set_method(&Method::Get)
        .and_then(|()| request.set_scheme(Some(&scheme)))
        .and_then(|()| request.set_authority(Some(authority)))
        .and_then(|()| request.set_path_with_query(Some(path)))
        .map_err(|()| format!("the host refused the parts of {url:?}"))?;
    let response = outgoing_handler::handle(request, None).map_err(|code| code_name(&code))?;
    response.subscribe().block();
    match response.get() {
        Some(Ok(Ok(response))) => Ok(response.status()),
        Some(Ok(Err(code))) => Err(code_name(&code)),
        Some(Err(())) => Err("the response was already taken".to_owned()),
        None => Err("the response is not ready after waiting for it".to_owned()),
    }
}

#[derive(Deserialize)]
struct Depth {
    depth: u64,
}

/// Plain recursion: each level is a wasm call frame (locals live on the
/// engine's stack, not in linear memory), so a huge depth exhausts the
/// call stack itself.
#[inline(never)]
fn descend(depth: u64) -> u64 {
    if depth == 0 {
        return 0;
    }
    black_box(descend(black_box(depth - 1))).wrapping_add(1)
}

fn recurse(call: &Call) -> Result<String, Error> {
    let Depth { depth } = args(call)?;
    Ok(format!("ok: reached depth {}", descend(depth)))
}

#[derive(Deserialize)]
struct Spin {
    ms: Option<u64>,
}

fn spin(call: &Call) -> Result<String, Error> {
    let Spin { ms } = args(call)?;
    let mut n: u64 = 0;
    let Some(ms) = ms else {
        loop {
            n = black_box(n.wrapping_add(1));
        }
    };
    let started = Instant::now();
    let until = Duration::from_millis(ms);
    while started.elapsed() < until {
        for _ in 0..1000 {
            n = black_box(n.wrapping_add(1));
        }
    }
    Ok(format!("ok: spun {ms} ms"))
}

#[derive(Deserialize)]
struct Mib {
    mib: usize,
}

fn alloc(call: &Call) -> Result<String, Error> {
    const MIB: usize = 1 << 20;
    let Mib { mib } = args(call)?;
    let mut hoard: Vec<Vec<u8>> = Vec::with_capacity(mib);
    for _ in 0..mib {
        let mut block = vec![0u8; MIB];
        // Touch every page so the memory is really used.
        for byte in block.iter_mut().step_by(4096) {
            *byte = 1;
        }
        hoard.push(black_box(block));
    }
    let touched: usize = hoard.iter().map(|b| b.iter().step_by(4096).count()).sum();
    Ok(format!("ok: allocated {mib} MiB ({touched} pages)"))
}

#[derive(Deserialize)]
struct Kib {
    kib: usize,
}

fn huge_output(call: &Call) -> Result<String, Error> {
    let Kib { kib } = args(call)?;
    Ok("x".repeat(kib << 10))
}

#[derive(Deserialize)]
struct Malformed {
    kind: Option<String>,
}

fn malformed(call: &Call) -> Result<Outcome, Error> {
    let Malformed { kind } = args(call)?;
    Ok(match kind.as_deref().unwrap_or("structured") {
        "structured" => CallResult::text("the structured content is broken")
            .with_structured_json("{\"unterminated\": ")
            .into(),
        "empty_input" => InputRequired::new().into(),
        "bad_schema" => InputRequired::new()
            .request(
                "answer",
                InputRequest::Elicitation(ElicitationRequest::Form(FormElicitation {
                    message: "This form's schema is not a JSON object.".to_owned(),
                    requested_schema: "[\"not\", \"an\", \"object\"".to_owned(),
                })),
            )
            .into(),
        "valid" => CallResult::text("ok: well-formed")
            .with_structured(&json!({ "ok": true }))
            .into(),
        other => return Err(Error::new(format!("unknown kind `{other}`"))),
    })
}

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
}

fn sleep(call: &Call) -> Result<String, Error> {
    let Sleep { ms } = args(call)?;
    std::thread::sleep(Duration::from_millis(ms));
    Ok(format!("ok: slept {ms}"))
}

#[derive(Deserialize)]
struct Hoard {
    kind: String,
    count: usize,
    kib: Option<usize>,
    path: Option<String>,
}

fn hoard(call: &Call) -> Result<String, Error> {
    let Hoard {
        kind,
        count,
        kib,
        path,
    } = args(call)?;
    let held = match kind.as_str() {
        "pollables" => (0..count)
            .map(|_| wasip2::clocks::monotonic_clock::subscribe_duration(1_000_000_000))
            .collect::<Vec<_>>()
            .len(),
        "fields" => {
            let value = vec![b'a'; kib.unwrap_or(1) << 10];
            let mut held = Vec::with_capacity(count);
            for _ in 0..count {
                let fields = Fields::new();
                if let Err(error) = fields.append("x-hoard", &value) {
                    return Ok(format!("error: append refused: {error:?}"));
                }
                held.push(fields);
            }
            held.len()
        }
        "files" => {
            let path = path.unwrap_or_default();
            let mut held = Vec::with_capacity(count);
            for _ in 0..count {
                match std::fs::File::open(&path) {
                    Ok(file) => held.push(file),
                    Err(error) => return Ok(format!("error: {error}")),
                }
            }
            held.len()
        }
        other => return Err(Error::new(format!("unknown kind `{other}`"))),
    };
    Ok(format!("ok: held {held} {kind}"))
}

#[derive(Deserialize)]
struct Wide {
    shape: String,
    count: usize,
}

fn wide_output(call: &Call) -> Result<Outcome, Error> {
    let Wide { shape, count } = args(call)?;
    let text = |text: &str, annotations: Option<Annotations>| {
        ContentBlock::Text(TextContent {
            text: text.to_owned(),
            annotations,
        })
    };
    Ok(match shape.as_str() {
        "audience" => {
            let audience = (0..count)
                .map(|i| {
                    if i % 2 == 0 {
                        Role::User
                    } else {
                        Role::Assistant
                    }
                })
                .collect();
            let annotations = Annotations {
                audience,
                priority: None,
                last_modified: None,
            };
            CallResult::new()
                .with_content(text("annotated", Some(annotations)))
                .into()
        }
        "empty_blocks" | "blocks" => {
            let body = if shape == "blocks" { "x" } else { "" };
            (0..count)
                .fold(CallResult::new(), |result, _| {
                    result.with_content(text(body, None))
                })
                .into()
        }
        "roots" => (0..count)
            .fold(InputRequired::new(), |required, i| {
                required.list_roots(format!("r{i}"))
            })
            .into(),
        "forms" => (0..count)
            .fold(InputRequired::new(), |required, i| {
                required.request(
                    format!("f{i}"),
                    InputRequest::Elicitation(ElicitationRequest::Form(FormElicitation {
                        message: String::new(),
                        requested_schema: "{\"type\":\"object\",\"properties\":{}}".to_owned(),
                    })),
                )
            })
            .into(),
        other => return Err(Error::new(format!("unknown shape `{other}`"))),
    })
}

#[derive(Deserialize)]
struct Swap {
    path: String,
    target: String,
}

fn swap(call: &Call) -> Result<String, Error> {
    let Swap { path, target } = args(call)?;
    let moved = format!("{path}.moved");
    let swapped = std::fs::rename(&path, &moved).and_then(|()| symlink(&target, &path));
    Ok(report(swapped, |()| {
        format!("{path} now links to {target}")
    }))
}

/// Creates a symbolic link at guest path `link` pointing at `target` (std
/// has no stable way to on WASI 0.2): through the granted directory that
/// holds `link`.
fn symlink(target: &str, link: &str) -> std::io::Result<()> {
    let (dir, relative) = get_directories()
        .into_iter()
        .find_map(|(dir, guest)| {
            let relative = link.strip_prefix(guest.trim_end_matches('/'))?;
            let relative = relative.strip_prefix('/')?.to_owned();
            Some((dir, relative))
        })
        .ok_or_else(|| std::io::Error::other(format!("{link} is in no granted directory")))?;
    dir.symlink_at(target, &relative)
        .map_err(|code| std::io::Error::other(format!("{code:?}")))
}
