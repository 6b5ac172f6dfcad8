//! Fuzz target: a guest's outcome turned into the reply Airlock sends.
//!
//! The input drives a generator of WIT outcomes (tool results, input
//! requests, prompt results, resource contents, completions) of any shape:
//! many blocks, empty blocks, long audience lists, binary data, invalid JSON
//! texts, JSON nested deep. Each goes through what the server does with it:
//! the per-outcome item counts (`runtime::output`), the conversion to wire
//! shapes (`protocol::wire`, JSON texts within [`MAX_DEPTH`]) and the
//! encoding within the output limit (`jsonrpc::encode_within`). Nothing may
//! panic, and:
//!
//! - an encoded reply is never longer than the limit, and is valid JSON;
//! - an encoded reply nests no deeper than [`MAX_DEPTH`] plus the levels of
//!   the deepest place these shapes put a guest's JSON text;
//! - an outcome over the item limits is refused before it is converted;
//! - an audience on the wire names each role at most once.

#![no_main]

use airlock::protocol::jsonrpc;
use airlock::runtime::output::{Outcome, OutcomeLimits};
use airlock::runtime::{wit, wit_completions, wit_prompts, wit_resources};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::{Value, json};

/// `airlock::protocol::wire` is `pub(crate)`, so its source is compiled here a
/// second time, with the checks of guest JSON it uses (`guest_json`, private
/// too), against the public types it names as `crate::runtime` and
/// `crate::registry`.
mod runtime {
    pub use airlock::runtime::{wit, wit_completions, wit_prompts, wit_resources};
}
mod registry {
    pub use airlock::registry::skills;
}
#[allow(dead_code, clippy::all)]
#[path = "../../host/src/guest_json.rs"]
mod guest_json;
#[allow(dead_code, clippy::all)]
#[path = "../../host/src/protocol/wire.rs"]
mod wire;

/// A small depth limit of JSON texts, so the fuzzer passes it.
const MAX_DEPTH: usize = 8;

/// The deepest a guest's JSON text sits in the results below: a prompt
/// message's embedded resource's `_meta` (`{messages[{content{resource{`).
const DEEPEST_PLACE: usize = 5;

/// Small limits, so the fuzzer reaches them.
const LIMITS: OutcomeLimits = OutcomeLimits {
    content_blocks: 64,
    input_requests: 8,
};

/// How many items a generated list may hold (past the limits above).
const MAX_ITEMS: usize = 200;

fn string(u: &mut Unstructured) -> Result<String> {
    let len = u.int_in_range(0..=64)?;
    let bytes = u.bytes(len.min(u.len()))?;
    Ok(String::from_utf8_lossy(bytes).into_owned())
}

/// A JSON text: often valid, sometimes not, sometimes nested past
/// [`MAX_DEPTH`].
fn json_text(u: &mut Unstructured) -> Result<String> {
    Ok(match u.int_in_range(0..=4)? {
        0 => "{}".to_owned(),
        1 => json!({ "type": "object", "properties": { string(u)?: { "type": "string" } } })
            .to_string(),
        2 => json!([string(u)?, u.arbitrary::<f64>()?]).to_string(),
        3 => {
            let depth = u.int_in_range(0..=2 * MAX_DEPTH)?;
            format!("{{\"n\":{}{}}}", "[".repeat(depth), "]".repeat(depth))
        }
        _ => string(u)?,
    })
}

fn items<T>(
    u: &mut Unstructured,
    item: impl Fn(&mut Unstructured) -> Result<T>,
) -> Result<Vec<T>> {
    let n = u.int_in_range(0..=MAX_ITEMS)?;
    (0..n).map(|_| item(u)).collect()
}

fn role(u: &mut Unstructured) -> Result<wit::Role> {
    Ok(if u.arbitrary()? {
        wit::Role::User
    } else {
        wit::Role::Assistant
    })
}

fn annotations(u: &mut Unstructured) -> Result<Option<wit::Annotations>> {
    if !u.arbitrary()? {
        return Ok(None);
    }
    Ok(Some(wit::Annotations {
        audience: items(u, role)?,
        priority: u.arbitrary()?,
        last_modified: u.arbitrary::<bool>()?.then(|| string(u)).transpose()?,
    }))
}

fn contents(u: &mut Unstructured) -> Result<wit::ResourceContents> {
    Ok(wit::ResourceContents {
        uri: string(u)?,
        mime_type: u.arbitrary::<bool>()?.then(|| string(u)).transpose()?,
        body: if u.arbitrary()? {
            wit::ResourceBody::Text(string(u)?)
        } else {
            wit::ResourceBody::Blob(string(u)?.into_bytes())
        },
        meta: u.arbitrary::<bool>()?.then(|| json_text(u)).transpose()?,
    })
}

fn block(u: &mut Unstructured) -> Result<wit::ContentBlock> {
    Ok(match u.int_in_range(0..=3)? {
        0 => wit::ContentBlock::Text(wit::TextContent {
            text: string(u)?,
            annotations: annotations(u)?,
        }),
        1 => wit::ContentBlock::Image(wit::MediaContent {
            data: string(u)?.into_bytes(),
            mime_type: string(u)?,
            annotations: annotations(u)?,
        }),
        2 => wit::ContentBlock::ResourceLink(wit::ResourceLink {
            uri: string(u)?,
            name: string(u)?,
            title: None,
            description: u.arbitrary::<bool>()?.then(|| string(u)).transpose()?,
            mime_type: None,
            size: u.arbitrary()?,
            annotations: annotations(u)?,
        }),
        _ => wit::ContentBlock::EmbeddedResource(wit::EmbeddedResource {
            contents: contents(u)?,
            annotations: annotations(u)?,
        }),
    })
}

fn input_request(u: &mut Unstructured) -> Result<wit::InputRequest> {
    Ok(match u.int_in_range(0..=3)? {
        0 => wit::InputRequest::Roots,
        1 => wit::InputRequest::Elicitation(wit::ElicitationRequest::Form(
            wit::FormElicitation {
                message: string(u)?,
                requested_schema: json_text(u)?,
            },
        )),
        2 => wit::InputRequest::Elicitation(wit::ElicitationRequest::Url(wit::UrlElicitation {
            message: string(u)?,
            url: string(u)?,
        })),
        _ => wit::InputRequest::Sampling(wit::SamplingRequest {
            messages: items(u, |u| {
                Ok(wit::SamplingMessage {
                    role: role(u)?,
                    content: items(u, |u| {
                        Ok(wit::SamplingContent::Text(wit::TextContent {
                            text: string(u)?,
                            annotations: annotations(u)?,
                        }))
                    })?,
                })
            })?,
            model_preferences: None,
            system_prompt: u.arbitrary::<bool>()?.then(|| string(u)).transpose()?,
            include_context: None,
            temperature: u.arbitrary()?,
            max_tokens: u.arbitrary()?,
            stop_sequences: items(u, string)?,
            metadata: u.arbitrary::<bool>()?.then(|| json_text(u)).transpose()?,
            tools: Vec::new(),
            tool_choice: None,
        }),
    })
}

fn input_required(u: &mut Unstructured) -> Result<wit::InputRequired> {
    Ok(wit::InputRequired {
        requests: items(u, |u| Ok((string(u)?, input_request(u)?)))?,
        state: u.arbitrary()?,
    })
}

/// Input requests as the server sends them: an object keyed by the guest's
/// keys, in order.
struct Keyed<'a>(Vec<(&'a str, wire::InputRequest<'a>)>);

impl Serialize for Keyed<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (key, request) in &self.0 {
            map.serialize_entry(key, request)?;
        }
        map.end()
    }
}

/// An `input_required` result's requests.
#[derive(Serialize)]
struct Required<'a> {
    #[serde(rename = "inputRequests")]
    input_requests: Keyed<'a>,
}

/// Encodes `result` within `limit` and checks what comes out.
fn encode(result: impl Serialize, limit: usize) {
    if let Ok(body) = jsonrpc::encode_within(&result, limit) {
        assert!(body.len() <= limit, "{} bytes over {limit}", body.len());
        let reply: Value = serde_json::from_str(&body).expect("a reply is JSON");
        check_audiences(&reply);
        let depth = depth_of(&reply);
        assert!(depth <= MAX_DEPTH + DEEPEST_PLACE, "a reply {depth} deep: {body}");
    }
}

/// The depth of the deepest array or object in `value`.
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(members) => 1 + members.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// Every `audience` names each role at most once.
fn check_audiences(value: &Value) {
    match value {
        Value::Object(map) => {
            if let Some(Value::Array(roles)) = map.get("audience") {
                assert!(roles.len() <= 2, "audience {roles:?}");
                assert!(roles.len() < 2 || roles[0] != roles[1], "audience {roles:?}");
            }
            map.values().for_each(check_audiences);
        }
        Value::Array(items) => items.iter().for_each(check_audiences),
        _ => {}
    }
}

/// The item counts gate the conversion, as in the runtime.
fn counted(outcome: &impl Outcome) -> bool {
    let counts = outcome.counts();
    let allowed = counts.check(&LIMITS).is_ok();
    assert_eq!(
        allowed,
        counts.content_blocks <= LIMITS.content_blocks
            && counts.input_requests <= LIMITS.input_requests
    );
    allowed
}

fn run(u: &mut Unstructured) -> Result<()> {
    let limit = u.int_in_range(0..=64 << 10)?;
    match u.int_in_range(0..=4)? {
        0 => {
            let result = wit::CallResult {
                content: items(u, block)?,
                structured_content: u.arbitrary::<bool>()?.then(|| json_text(u)).transpose()?,
                is_error: u.arbitrary()?,
            };
            let outcome = wit::CallOutcome::Complete(result);
            if counted(&outcome)
                && let wit::CallOutcome::Complete(result) = &outcome
                && let Ok(wire) = wire::call_result(result, MAX_DEPTH)
            {
                encode(wire, limit);
            }
        }
        1 => {
            let outcome = wit::CallOutcome::InputRequired(input_required(u)?);
            if counted(&outcome)
                && let wit::CallOutcome::InputRequired(required) = &outcome
            {
                let requests = required
                    .requests
                    .iter()
                    .map(|(key, request)| {
                        wire::input_request(request, MAX_DEPTH).map(|r| (key.as_str(), r))
                    })
                    .collect::<std::result::Result<Vec<_>, _>>();
                if let Ok(requests) = requests {
                    encode(Required { input_requests: Keyed(requests) }, limit);
                }
            }
        }
        2 => {
            let outcome = wit_prompts::PromptOutcome::Complete(wit_prompts::PromptResult {
                description: u.arbitrary::<bool>()?.then(|| string(u)).transpose()?,
                messages: items(u, |u| {
                    Ok(wit_prompts::PromptMessage {
                        role: role(u)?,
                        content: block(u)?,
                    })
                })?,
            });
            if counted(&outcome)
                && let wit_prompts::PromptOutcome::Complete(result) = &outcome
            {
                encode(wire::prompt_result(result, MAX_DEPTH), limit);
            }
        }
        3 => {
            let outcome = wit_resources::ReadOutcome::Complete(items(u, contents)?);
            if counted(&outcome)
                && let wit_resources::ReadOutcome::Complete(contents) = &outcome
            {
                let contents: Vec<_> = contents
                    .iter()
                    .map(|c| wire::resource_contents(c, MAX_DEPTH))
                    .collect();
                encode(contents, limit);
            }
        }
        _ => {
            let completion = wit_completions::Completion {
                values: items(u, string)?,
                total: u.arbitrary()?,
                has_more: u.arbitrary()?,
            };
            let wire = wire::complete_result(&completion);
            encode(wire, limit);
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let _ = run(&mut Unstructured::new(data));
});
