//! What the server answers to one request, typed, before it takes a wire
//! shape: a complete result, a component's request for input, or an error.
//!
//! [`Server::answer`](super::Server::answer) is the typed entry point of the
//! 2026-07-28 pipeline. The 2026-07-28 transports encode its [`Answer`] with
//! [`Answer::encode`], which adds what that revision stamps on every result
//! (`resultType`, `ttlMs` and `cacheScope` where they apply, and Airlock's
//! `_meta`). An adapter for another revision reads the typed answer as it
//! is: a result's own members, the input requests one by one, the error's
//! code; nothing is encoded to be parsed again.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde::ser::SerializeMap;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::jsonrpc::{self, RpcError};
use super::outcome::Outcome;

/// The encoded response to one request.
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC response message.
    pub body: Vec<u8>,
    /// The HTTP status Streamable HTTP pairs with it.
    pub http_status: u16,
    /// When the client may try again (`Retry-After`), for an error that
    /// says.
    pub retry_after: Option<Duration>,
    /// A `WWW-Authenticate` challenge, for an error that says.
    pub challenge: Option<Arc<String>>,
}

impl Reply {
    /// No message at all: what a request the client cancelled gets.
    pub fn none() -> Self {
        Reply {
            body: Vec::new(),
            http_status: 202,
            retry_after: None,
            challenge: None,
        }
    }

    /// The error reply to the request with this `id` (`None`: one whose id
    /// could not be read), with the HTTP status the error names.
    pub fn error(id: Option<&Value>, error: &RpcError) -> Self {
        Reply {
            body: jsonrpc::encode_error(id, error),
            http_status: error.http_status,
            retry_after: error.retry_after,
            challenge: error.challenge.clone(),
        }
    }
}

/// The answer to one request.
#[derive(Debug)]
pub enum Answer {
    /// A complete result.
    Complete(Complete),
    /// A component asked for input first (SEP-2322).
    InputRequired(InputRequired),
    /// The call goes on as a task (the tasks extension): a
    /// `CreateTaskResult`, whose members (an encoded object) are the task's.
    Task(String),
    /// A JSON-RPC error.
    Error(RpcError),
}

/// A complete result.
#[derive(Debug)]
pub struct Complete {
    /// The result's own members: one encoded JSON object, as every revision
    /// has it.
    pub members: String,
    /// How long a client may cache the result, and with whom, for the
    /// results 2026-07-28 marks as cacheable.
    pub cache: Option<Cache>,
    /// Members of the result's `_meta` besides the server's own info.
    pub meta: Map<String, Value>,
    /// How the request ended: [`Outcome::Ok`], or for a `tools/call`
    /// result that says `isError`, why: the tool failed
    /// ([`Outcome::Failed`]), or its arguments were refused before it ran
    /// ([`Outcome::Invalid`]).
    pub outcome: Outcome,
}

/// A cacheable result's `ttlMs` and `cacheScope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cache {
    /// `ttlMs`.
    pub ttl_ms: u64,
    /// `cacheScope`: `public` (the same for every caller) or `private`.
    pub scope: &'static str,
}

/// A component's request for input: what to ask the client, and the state
/// to carry into the next round.
#[derive(Debug)]
pub struct InputRequired {
    /// The requests, in the order the component made them.
    pub requests: Vec<InputRequest>,
    /// The sealed `requestState` the retry must carry.
    pub request_state: String,
}

/// One input request.
#[derive(Debug)]
pub struct InputRequest {
    /// The key its answer comes back under.
    pub key: String,
    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub method: &'static str,
    /// Its params: one encoded JSON object, as the 2026-07-28 wire has them.
    pub params: String,
}

impl Complete {
    /// A result with these members (an encoded object), not cacheable.
    pub fn new(members: String) -> Complete {
        Complete {
            members,
            cache: None,
            meta: Map::new(),
            outcome: Outcome::Ok,
        }
    }

    /// The same result, cacheable for `ttl_ms` in `scope`.
    pub fn cached(mut self, ttl_ms: u64, scope: &'static str) -> Complete {
        self.cache = Some(Cache { ttl_ms, scope });
        self
    }

    /// The same result, ending its request with `outcome` (any but
    /// [`Outcome::Ok`]: a result that says `isError`).
    pub fn with_outcome(mut self, outcome: Outcome) -> Complete {
        self.outcome = outcome;
        self
    }

    /// Whether it says `isError`.
    pub fn is_error(&self) -> bool {
        self.outcome != Outcome::Ok
    }
}

impl From<RpcError> for Answer {
    fn from(error: RpcError) -> Answer {
        Answer::Error(error)
    }
}

impl Answer {
    /// A complete result whose members are `result` (which must serialize
    /// as a JSON object).
    pub fn complete(result: &impl Serialize) -> Answer {
        match serde_json::to_string(result) {
            Ok(members) => Answer::Complete(Complete::new(members)),
            Err(error) => Answer::Error(RpcError::internal(format!(
                "cannot encode the result: {error}"
            ))),
        }
    }

    /// The JSON-RPC code, if this is an error.
    pub fn error_code(&self) -> Option<i32> {
        match self {
            Answer::Error(error) => Some(error.code),
            _ => None,
        }
    }

    /// Whether this is a complete `tools/call` result that says `isError`.
    pub fn is_tool_error(&self) -> bool {
        matches!(self, Answer::Complete(complete) if complete.is_error())
    }

    /// How the request ended.
    pub fn outcome(&self) -> Outcome {
        match self {
            Answer::Complete(complete) => complete.outcome,
            Answer::InputRequired(_) | Answer::Task(_) => Outcome::Ok,
            Answer::Error(error) => error.outcome,
        }
    }

    /// The same answer, cacheable for `ttl_ms` in `scope` if it is a
    /// complete result.
    pub fn cached(self, ttl_ms: u64, scope: &'static str) -> Answer {
        match self {
            Answer::Complete(complete) => Answer::Complete(complete.cached(ttl_ms, scope)),
            other => other,
        }
    }

    /// The 2026-07-28 message answering request `id`, stamped with
    /// `server_info` (`{name, version}`).
    pub fn encode(&self, id: &Value, server_info: &RawValue) -> Reply {
        match self {
            Answer::Complete(complete) => Reply {
                body: encode_complete(id, complete, server_info),
                http_status: 200,
                retry_after: None,
                challenge: None,
            },
            Answer::InputRequired(required) => Reply {
                body: encode_input_required(id, required, server_info),
                http_status: 200,
                retry_after: None,
                challenge: None,
            },
            Answer::Task(members) => Reply {
                body: encode_task(id, members, server_info),
                http_status: 200,
                retry_after: None,
                challenge: None,
            },
            Answer::Error(error) => Reply::error(Some(id), error),
        }
    }
}

/// `{"jsonrpc":"2.0","id":…,"result":{"resultType":"complete",<members>,
/// "ttlMs":…,"cacheScope":…,"_meta":{…}}}`: the result's members are copied
/// as they were encoded, never parsed.
fn encode_complete(id: &Value, complete: &Complete, server_info: &RawValue) -> Vec<u8> {
    let members = object_members(&complete.members);
    let mut out = result_start(id, "complete", members.len());
    if !members.is_empty() {
        out.push(b',');
        out.extend_from_slice(members.as_bytes());
    }
    if let Some(cache) = complete.cache {
        out.extend_from_slice(b",\"ttlMs\":");
        write_json(&mut out, &cache.ttl_ms);
        out.extend_from_slice(b",\"cacheScope\":");
        write_json(&mut out, cache.scope);
    }
    result_end(out, server_info, &complete.meta)
}

/// `{"jsonrpc":"2.0","id":…,"result":{"resultType":"task",<members>,
/// "_meta":{…}}}`.
fn encode_task(id: &Value, members: &str, server_info: &RawValue) -> Vec<u8> {
    let members = object_members(members);
    let mut out = result_start(id, "task", members.len());
    if !members.is_empty() {
        out.push(b',');
        out.extend_from_slice(members.as_bytes());
    }
    result_end(out, server_info, &Map::new())
}

/// `{"jsonrpc":"2.0","id":…,"result":{"resultType":"input_required",
/// "inputRequests":{<key>:{"method":…,"params":<params>},…},
/// "requestState":…,"_meta":{…}}}`.
fn encode_input_required(id: &Value, required: &InputRequired, server_info: &RawValue) -> Vec<u8> {
    let size: usize = required
        .requests
        .iter()
        .map(|r| r.key.len() + r.params.len() + 32)
        .sum();
    let mut out = result_start(id, "input_required", size + required.request_state.len());
    if !required.requests.is_empty() {
        out.extend_from_slice(b",\"inputRequests\":{");
        for (i, request) in required.requests.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json(&mut out, &request.key);
            out.extend_from_slice(b":{\"method\":");
            write_json(&mut out, request.method);
            out.extend_from_slice(b",\"params\":");
            out.extend_from_slice(request.params.as_bytes());
            out.push(b'}');
        }
        out.push(b'}');
    }
    out.extend_from_slice(b",\"requestState\":");
    write_json(&mut out, &required.request_state);
    result_end(out, server_info, &Map::new())
}

/// The start of a result message, up to its `resultType`; `room` is what
/// the caller will add.
fn result_start(id: &Value, result_type: &str, room: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(room + 192);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    write_json(&mut out, id);
    out.extend_from_slice(b",\"result\":{\"resultType\":");
    write_json(&mut out, result_type);
    out
}

/// The end of a result message: its `_meta`, and the closing braces.
fn result_end(mut out: Vec<u8>, server_info: &RawValue, extra: &Map<String, Value>) -> Vec<u8> {
    out.extend_from_slice(b",\"_meta\":");
    write_json(&mut out, &ResultMeta { server_info, extra });
    out.extend_from_slice(b"}}");
    out
}

/// What lies between the braces of an encoded JSON object (trimmed).
fn object_members(object: &str) -> &str {
    object
        .trim()
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .map_or("", str::trim)
}

/// Appends `value` as JSON; these values (ids, numbers, strings, maps of
/// JSON values) always encode.
fn write_json(out: &mut Vec<u8>, value: &(impl Serialize + ?Sized)) {
    serde_json::to_writer(out, value).expect("a JSON value always encodes");
}

/// Airlock's `_meta` of a result: the server's info, then `extra`.
struct ResultMeta<'a> {
    server_info: &'a RawValue,
    extra: &'a Map<String, Value>,
}

/// The key of the server's info in a result's `_meta`.
const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

impl Serialize for ResultMeta<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry(SERVER_INFO, self.server_info)?;
        for (key, value) in self.extra {
            map.serialize_entry(key, value)?;
        }
        map.end()
    }
}

impl crate::audit::Settled for Answer {
    fn outcome(&self) -> &'static str {
        match self {
            Answer::Complete(complete) if complete.is_error() => "tool_error",
            Answer::Complete(_) => "complete",
            Answer::InputRequired(_) => "input_required",
            Answer::Task(_) => "task",
            Answer::Error(_) => "error",
        }
    }

    fn error_code(&self) -> Option<i32> {
        Answer::error_code(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn info() -> Box<RawValue> {
        RawValue::from_string(r#"{"name":"airlock"}"#.to_owned()).unwrap()
    }

    fn decode(reply: &Reply) -> Value {
        serde_json::from_slice(&reply.body).unwrap()
    }

    #[test]
    fn results_get_the_2026_stamps() {
        let answer = Answer::complete(&json!({"content": [], "isError": true}));
        assert_eq!(
            decode(&answer.encode(&json!(7), &info())),
            json!({"jsonrpc": "2.0", "id": 7, "result": {
                "resultType": "complete", "content": [], "isError": true,
                "_meta": {SERVER_INFO: {"name": "airlock"}}}})
        );
        let Answer::Complete(empty) = Answer::complete(&json!({})) else {
            panic!("a complete answer")
        };
        let mut cached = empty.cached(60_000, "public");
        cached.meta.insert("x".into(), json!(1));
        assert_eq!(
            decode(&Answer::Complete(cached).encode(&json!("a"), &info()))["result"],
            json!({"resultType": "complete", "ttlMs": 60000, "cacheScope": "public",
                   "_meta": {SERVER_INFO: {"name": "airlock"}, "x": 1}})
        );
    }

    #[test]
    fn input_requests_keep_their_order_and_errors_their_status() {
        let request = |key: &str| InputRequest {
            key: key.into(),
            method: "roots/list",
            params: "{}".into(),
        };
        let answer = Answer::InputRequired(InputRequired {
            requests: vec![request("b"), request("a")],
            request_state: "s".into(),
        });
        let reply = answer.encode(&json!(1), &info());
        let text = String::from_utf8(reply.body).unwrap();
        assert!(
            text.find("\"b\"").unwrap() < text.find("\"a\"").unwrap(),
            "{text}"
        );
        let error = Answer::Error(RpcError::invalid_request("bad")).encode(&json!(1), &info());
        assert_eq!(error.http_status, 400);
        assert_eq!(decode(&error)["error"]["code"], -32600);
    }
}
