//! Test-only guest for Airlock's end-to-end tests.
//!
//! Each tool probes one property of the host: fresh instances (`count`,
//! `count_rounds`), deadlines and limits (`spin`, `hog`, `sleep`,
//! `big_output`), failures (`trap`, `bad_json`), notifications and the
//! server log (`progress`, `log`), the mapping of every input request and
//! response (`ask`), and the sandbox (`env`, `read_file`). Never deploy it.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use airlock_guest::serde_json::{self, Value};
use airlock_guest::types::{ElicitationAction, InputResponse, Role, SamplingContent, ToolChoice};
use airlock_guest::{
    Call, CallResult, Error, InputRequired, Outcome, SamplingRequest, Tool, Tools, json, log,
    progress,
};
use serde::Deserialize;

/// Incremented by `count` and `count_rounds`. A fresh instance starts at 0.
static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Increments [`COUNTER`] and returns its new value.
fn bump() -> u32 {
    COUNTER.fetch_add(1, Ordering::SeqCst) + 1
}

struct Probe;

/// A tool with these properties (a JSON Schema `properties` object) and
/// `required` names.
fn tool(name: &str, description: &str, properties: Value, required: &[&str]) -> Tool {
    Tool::new(name, description).input_schema(json!({
        "type": "object",
        "properties": properties,
        "required": required
    }))
}

impl Tools for Probe {
    fn list() -> Vec<Tool> {
        vec![
            tool(
                "count",
                "Increments a global counter and returns it (1 in a fresh instance).",
                json!({}),
                &[],
            ),
            tool(
                "count_rounds",
                "Runs `rounds` rounds, each recording the global counter; returns them joined by commas.",
                json!({ "rounds": { "type": "integer", "minimum": 1 } }),
                &["rounds"],
            ),
            tool("spin", "Loops forever.", json!({}), &[]),
            tool("hog", "Allocates memory without bound.", json!({}), &[]),
            tool("trap", "Panics.", json!({}), &[]),
            tool(
                "big_output",
                "Returns a text block of `bytes` bytes.",
                json!({ "bytes": { "type": "integer", "minimum": 0 } }),
                &["bytes"],
            ),
            tool(
                "bad_json",
                "Returns structured content that is not valid JSON.",
                json!({}),
                &[],
            ),
            tool(
                "sleep",
                "Sleeps `ms` milliseconds, then returns `slept <ms>`.",
                json!({ "ms": { "type": "integer", "minimum": 0 } }),
                &["ms"],
            ),
            tool(
                "progress",
                "Logs and reports progress `steps` times, then returns `done`.",
                json!({ "steps": { "type": "integer", "minimum": 0 } }),
                &["steps"],
            ),
            tool(
                "log",
                "Logs `text` at info `times` times (default once), then returns `logged <times>`.",
                json!({
                    "text": { "type": "string" },
                    "times": { "type": "integer", "minimum": 0 }
                }),
                &["text"],
            ),
            tool(
                "ask",
                "Asks for one input of `kind` under key `answer`, then describes the answer.",
                json!({
                    "kind": {
                        "type": "string",
                        "enum": ["form", "url", "sampling", "sampling_tools", "roots"]
                    }
                }),
                &["kind"],
            ),
            tool(
                "env",
                "Returns the environment variables and arguments the guest sees.",
                json!({}),
                &[],
            ),
            tool(
                "read_file",
                "Reads a file from the guest's point of view.",
                json!({ "path": { "type": "string" } }),
                &["path"],
            ),
        ]
    }

    fn call(call: Call) -> Outcome {
        match call.name() {
            "count" => Outcome::text(bump().to_string()),
            "count_rounds" => count_rounds(&call).into(),
            "spin" => spin(),
            "hog" => hog(),
            "trap" => panic!("probe: trap was called"),
            "big_output" => big_output(&call).into(),
            "bad_json" => CallResult::text("the structured content is broken")
                .with_structured_json("{\"unterminated\": ")
                .into(),
            "sleep" => sleep(&call).into(),
            "progress" => steps(&call).into(),
            "log" => log_text(&call).into(),
            "ask" => ask(&call).into(),
            "env" => env(),
            "read_file" => read_file(&call).into(),
            other => Outcome::unknown_tool(other),
        }
    }
}

airlock_guest::export!(Probe);

#[derive(Deserialize)]
struct Rounds {
    rounds: usize,
}

/// Each round bumps the counter and appends the value to the state; the
/// last round returns them all, e.g. `1,1,1` when every round is fresh.
fn count_rounds(call: &Call) -> Result<Outcome, Error> {
    let Rounds { rounds } = call.args()?;
    let mut seen: Vec<u32> = call.state().unwrap_or_default();
    seen.push(bump());
    if seen.len() < rounds {
        return Ok(Outcome::continue_with(&seen));
    }
    let text: Vec<String> = seen.iter().map(u32::to_string).collect();
    Ok(CallResult::text(text.join(","))
        .with_structured(&json!({ "round": call.round(), "values": seen }))
        .into())
}

fn spin() -> ! {
    let mut n: u64 = 0;
    loop {
        n = black_box(n.wrapping_add(1));
    }
}

fn hog() -> ! {
    const MIB: usize = 1 << 20;
    let mut hoard: Vec<Vec<u8>> = Vec::new();
    loop {
        let mut block = vec![0u8; MIB];
        // Touch every page so the memory is really used.
        for byte in block.iter_mut().step_by(4096) {
            *byte = 1;
        }
        hoard.push(black_box(block));
    }
}

#[derive(Deserialize)]
struct Bytes {
    bytes: usize,
}

fn big_output(call: &Call) -> Result<Outcome, Error> {
    let Bytes { bytes } = call.args()?;
    Ok(Outcome::text("x".repeat(bytes)))
}

#[derive(Deserialize)]
struct Sleep {
    ms: u64,
}

fn sleep(call: &Call) -> Result<Outcome, Error> {
    let Sleep { ms } = call.args()?;
    std::thread::sleep(Duration::from_millis(ms));
    Ok(Outcome::text(format!("slept {ms}")))
}

#[derive(Deserialize)]
struct Steps {
    steps: u32,
}

fn steps(call: &Call) -> Result<Outcome, Error> {
    let Steps { steps } = call.args()?;
    for i in 1..=steps {
        log::info(format!("step {i}"));
        progress(f64::from(i), Some(f64::from(steps)), None);
    }
    Ok(Outcome::text("done"))
}

#[derive(Deserialize)]
struct LogText {
    text: String,
    #[serde(default = "once")]
    times: u32,
}

fn once() -> u32 {
    1
}

fn log_text(call: &Call) -> Result<Outcome, Error> {
    let LogText { text, times } = call.args()?;
    for _ in 0..times {
        log::info(&text);
    }
    Ok(Outcome::text(format!("logged {times}")))
}

#[derive(Deserialize)]
struct Ask {
    kind: String,
}

/// Round 1 asks for one input of `kind` under `answer`; a retry carrying an
/// `answer` describes it: text for quick checks, structured content with
/// every field for thorough ones.
fn ask(call: &Call) -> Result<Outcome, Error> {
    let Ask { kind } = call.args()?;
    if let Some(answer) = call.response("answer") {
        return Ok(describe(answer));
    }
    let asked = InputRequired::new();
    let asked = match kind.as_str() {
        "form" => asked.elicit_form(
            "answer",
            "Please enter a name.",
            json!({
                "type": "object",
                "properties": { "name": { "type": "string" } },
                "required": ["name"]
            }),
        ),
        "url" => asked.elicit_url("answer", "Please sign in.", "https://example.com/auth"),
        "sampling" => asked.sample(
            "answer",
            SamplingRequest::new(100)
                .system_prompt("Answer briefly.")
                .user("Say hello."),
        ),
        "sampling_tools" => asked.sample(
            "answer",
            SamplingRequest::new(100)
                .user("What is the weather in Paris?")
                .tool(
                    Tool::new("get_weather", "Gets the weather of a city.").input_schema(json!({
                        "type": "object",
                        "properties": { "city": { "type": "string" } },
                        "required": ["city"]
                    })),
                )
                .tool_choice(ToolChoice::Auto),
        ),
        "roots" => asked.list_roots("answer"),
        other => return Err(Error::new(format!("unknown kind `{other}`"))),
    };
    Ok(asked.into())
}

/// Parses JSON text from the host, keeping it as a string if it is not JSON.
fn parse(json: &str) -> Value {
    serde_json::from_str(json).unwrap_or_else(|_| Value::String(json.to_owned()))
}

fn describe(answer: &InputResponse) -> Outcome {
    let (text, detail) = match answer {
        InputResponse::Elicitation(elicited) => {
            let action = match elicited.action {
                ElicitationAction::Accept => "accept",
                ElicitationAction::Decline => "decline",
                ElicitationAction::Cancel => "cancel",
            };
            let content = elicited.content.as_deref().map(parse);
            let text = elicited
                .content
                .clone()
                .unwrap_or_else(|| action.to_owned());
            let detail = json!({ "kind": "elicitation", "action": action, "content": content });
            (text, detail)
        }
        InputResponse::Sampling(reply) => {
            let tool_uses: Vec<Value> = reply
                .tool_uses()
                .map(|t| json!({ "id": t.id, "name": t.name, "input": parse(&t.input) }))
                .collect();
            let blocks: Vec<&str> = reply
                .content
                .iter()
                .map(|block| match block {
                    SamplingContent::Text(_) => "text",
                    SamplingContent::Image(_) => "image",
                    SamplingContent::Audio(_) => "audio",
                    SamplingContent::ToolUse(_) => "tool_use",
                    SamplingContent::ToolResult(_) => "tool_result",
                })
                .collect();
            let detail = json!({
                "kind": "sampling",
                "role": match reply.role {
                    Role::User => "user",
                    Role::Assistant => "assistant",
                },
                "model": reply.model,
                "stopReason": reply.stop_reason,
                "text": reply.text(),
                "blocks": blocks,
                "toolUses": tool_uses,
            });
            // The text, or for a reply with only tool calls, `tool_use <name>`
            // per call.
            let mut text = reply.text();
            if text.is_empty() {
                let calls: Vec<String> = reply
                    .tool_uses()
                    .map(|t| format!("tool_use {}", t.name))
                    .collect();
                text = calls.join("\n");
            }
            (text, detail)
        }
        InputResponse::Roots(roots) => {
            let list: Vec<Value> = roots
                .iter()
                .map(|root| json!({ "uri": root.uri, "name": root.name }))
                .collect();
            let detail = json!({ "kind": "roots", "roots": list });
            (roots.len().to_string(), detail)
        }
    };
    CallResult::text(text).with_structured(&detail).into()
}

fn env() -> Outcome {
    let vars: BTreeMap<String, String> = std::env::vars().collect();
    let args: Vec<String> = std::env::args().collect();
    Outcome::json(&json!({ "vars": vars, "args": args }))
}

#[derive(Deserialize)]
struct ReadFile {
    path: String,
}

fn read_file(call: &Call) -> Result<Outcome, Error> {
    let ReadFile { path } = call.args()?;
    match std::fs::read_to_string(&path) {
        Ok(content) => Ok(Outcome::text(content)),
        Err(err) => Err(Error::new(err.to_string())),
    }
}
