//! MCP 2026-07-28 message building and reading, shared by both transports.

use serde_json::{Map, Value, json};

/// The protocol version every request declares.
pub const PROTOCOL_VERSION: &str = "2026-07-28";
/// `_meta` key of the protocol version.
pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client capabilities.
pub const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key of the requested log level.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// Result `_meta` key of the server identity.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Notification `_meta` key tagging every notification of a listen stream
/// with the listen request's id.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// Error codes.
pub mod code {
    /// Not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a request object, or a batch.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown or removed method.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params (missing `_meta`, unknown tool, bad requestState, …).
    pub const INVALID_PARAMS: i64 = -32602;
    /// A header is missing or does not match the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_CAPABILITY: i64 = -32021;
    /// The protocol version is not supported.
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    /// A quota of the caller is used up (Airlock's own).
    pub const QUOTA_EXCEEDED: i64 = -31429;
}

/// Every client capability a 2026-07-28 client can declare.
pub fn all_caps() -> Value {
    json!({
        "elicitation": {"form": {}, "url": {}},
        "sampling": {"tools": {}, "context": {}},
        "roots": {},
    })
}

/// No optional capability.
pub fn no_caps() -> Value {
    json!({})
}

/// A request `_meta` with the protocol version and `caps`.
pub fn meta(caps: Value) -> Value {
    json!({ META_VERSION: PROTOCOL_VERSION, META_CAPS: caps })
}

/// `params` (an object) with a `_meta` added for `caps`, keeping any `_meta`
/// fields it already has.
pub fn with_meta(params: Value, caps: Value) -> Value {
    let mut params = match params {
        Value::Object(map) => map,
        Value::Null => Map::new(),
        other => panic!("params must be an object, got {other}"),
    };
    let mut m = meta(caps).as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(existing)) = params.remove("_meta") {
        m.extend(existing);
    }
    params.insert("_meta".into(), Value::Object(m));
    Value::Object(params)
}

/// `subscriptions/listen` params asking for `notifications` (the filter,
/// e.g. `{"toolsListChanged": true}`), with a `_meta` declaring no
/// capabilities.
pub fn listen_params(notifications: Value) -> Value {
    with_meta(json!({ "notifications": notifications }), no_caps())
}

/// The retry of any multi-round request (`tools/call`, `prompts/get`,
/// `resources/read`) for an `input_required` result: the same `params`,
/// with `responses` as `inputResponses` (none if `Value::Null`) and the
/// result's `requestState` echoed.
pub fn retry_params(params: &Value, input_required: &Value, responses: Value) -> Value {
    let Value::Object(mut object) = params.clone() else {
        panic!("params must be an object, got {params}");
    };
    object.remove("inputResponses");
    object.remove("requestState");
    if !responses.is_null() {
        object.insert("inputResponses".into(), responses);
    }
    if let Some(state) = input_required.get("requestState") {
        object.insert("requestState".into(), state.clone());
    }
    Value::Object(object)
}

/// Asserts `note` is a notification `method` (no id) tagged with the
/// subscription id `id` (`params._meta["io.modelcontextprotocol/subscriptionId"]`);
/// returns its params.
#[track_caller]
pub fn assert_subscription_note<'a>(note: &'a Value, method: &str, id: &Value) -> &'a Value {
    assert_eq!(note["jsonrpc"], "2.0", "{note}");
    assert_eq!(note["method"], method, "expected {method}, got {note}");
    assert!(note.get("id").is_none(), "a notification has no id: {note}");
    assert_eq!(
        note["params"]["_meta"][META_SUBSCRIPTION_ID], *id,
        "the notification must carry the listen request's id as its subscriptionId: {note}"
    );
    &note["params"]
}

/// A full JSON-RPC request.
pub fn request(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A `tools/call`, round by round.
#[derive(Clone, Debug)]
pub struct ToolCall {
    /// Tool name.
    pub name: String,
    /// Arguments object.
    pub arguments: Value,
    /// Declared client capabilities.
    pub caps: Value,
    /// `inputResponses`, on a retry.
    pub input_responses: Option<Value>,
    /// `requestState`, on a retry.
    pub request_state: Option<Value>,
    /// Extra `_meta` fields (progressToken, logLevel).
    pub extra_meta: Map<String, Value>,
}

impl ToolCall {
    /// A first-round call declaring every capability.
    pub fn new(name: &str, arguments: Value) -> Self {
        Self {
            name: name.to_string(),
            arguments,
            caps: all_caps(),
            input_responses: None,
            request_state: None,
            extra_meta: Map::new(),
        }
    }

    /// Declares these capabilities instead.
    pub fn caps(mut self, caps: Value) -> Self {
        self.caps = caps;
        self
    }

    /// Adds `inputResponses`.
    pub fn responses(mut self, responses: Value) -> Self {
        self.input_responses = Some(responses);
        self
    }

    /// Adds `requestState` (a string, or any JSON value to test bad types).
    pub fn state(mut self, state: impl Into<Value>) -> Self {
        self.request_state = Some(state.into());
        self
    }

    /// The retry of this call for an `input_required` result: same name,
    /// arguments and capabilities, with `responses` (may be `Value::Null` for
    /// none) and the result's `requestState` echoed.
    pub fn retry(&self, input_required: &Value, responses: Value) -> Self {
        let mut next = self.clone();
        next.input_responses = (!responses.is_null()).then_some(responses);
        next.request_state = input_required.get("requestState").cloned();
        next
    }

    /// Asks for progress notifications.
    pub fn progress_token(mut self, token: impl Into<Value>) -> Self {
        self.extra_meta.insert("progressToken".into(), token.into());
        self
    }

    /// Asks for log messages at `level` and above.
    pub fn log_level(mut self, level: &str) -> Self {
        self.extra_meta.insert(META_LOG_LEVEL.into(), json!(level));
        self
    }

    /// The request params, `_meta` included.
    pub fn params(&self) -> Value {
        let mut params = Map::new();
        params.insert("name".into(), json!(self.name));
        params.insert("arguments".into(), self.arguments.clone());
        if let Some(r) = &self.input_responses {
            params.insert("inputResponses".into(), r.clone());
        }
        if let Some(s) = &self.request_state {
            params.insert("requestState".into(), s.clone());
        }
        let mut m = meta(self.caps.clone()).as_object().cloned().unwrap();
        m.extend(self.extra_meta.clone());
        params.insert("_meta".into(), Value::Object(m));
        Value::Object(params)
    }
}

/// The `result` of a JSON-RPC response; panics (showing it) on an error.
pub fn result(response: &Value) -> &Value {
    response
        .get("result")
        .unwrap_or_else(|| panic!("expected a result, got {response}"))
}

/// The `error` of a JSON-RPC response; panics (showing it) on a result.
pub fn error(response: &Value) -> &Value {
    response
        .get("error")
        .unwrap_or_else(|| panic!("expected an error, got {response}"))
}

/// The error code of a JSON-RPC error response.
pub fn error_code(response: &Value) -> i64 {
    error(response)
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| panic!("error without an integer code: {response}"))
}

/// The error message of a JSON-RPC error response.
pub fn error_message(response: &Value) -> String {
    error(response)
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("error without a string message: {response}"))
        .to_string()
}

/// Asserts `response` is an error with `code` that echoes `id`.
#[track_caller]
pub fn assert_error(response: &Value, code: i64, id: &Value) {
    assert_eq!(error_code(response), code, "wrong error code in {response}");
    assert_eq!(
        response.get("id"),
        Some(id),
        "the error must echo the request id: {response}"
    );
    assert_eq!(response["jsonrpc"], "2.0", "not JSON-RPC 2.0: {response}");
}

/// Asserts `response` is an error about `requestState` (-32602, message
/// naming it).
#[track_caller]
pub fn assert_state_rejected(response: &Value) {
    assert_eq!(
        error_code(response),
        code::INVALID_PARAMS,
        "a bad requestState must give -32602: {response}"
    );
    let message = error_message(response).to_ascii_lowercase();
    assert!(
        message.contains("requeststate"),
        "the error message should name requestState: {response}"
    );
}

/// `resultType` of a result.
pub fn result_type(result: &Value) -> &str {
    result
        .get("resultType")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("every result needs a string resultType: {result}"))
}

/// The result of a complete call; panics otherwise.
#[track_caller]
pub fn complete(response: &Value) -> &Value {
    let r = result(response);
    assert_eq!(
        result_type(r),
        "complete",
        "expected a complete result: {response}"
    );
    r
}

/// The result of an input-required call; panics otherwise. Checks that a
/// `requestState` string is present (Airlock always mints one).
#[track_caller]
pub fn input_required(response: &Value) -> &Value {
    let r = result(response);
    assert_eq!(
        result_type(r),
        "input_required",
        "expected an input_required result: {response}"
    );
    let state = r
        .get("requestState")
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("input_required without a requestState: {response}"));
    assert!(!state.is_empty(), "empty requestState: {response}");
    r
}

/// The `requestState` of an input-required result.
pub fn request_state(result: &Value) -> String {
    result["requestState"]
        .as_str()
        .unwrap_or_else(|| panic!("no requestState in {result}"))
        .to_string()
}

/// The one input request under `key`; panics if absent.
#[track_caller]
pub fn input_request<'a>(result: &'a Value, key: &str) -> &'a Value {
    result
        .get("inputRequests")
        .and_then(|r| r.get(key))
        .unwrap_or_else(|| panic!("no input request `{key}` in {result}"))
}

/// The keys of `inputRequests` (empty when there is none).
pub fn input_request_keys(result: &Value) -> Vec<String> {
    match result.get("inputRequests") {
        Some(Value::Object(map)) => map.keys().cloned().collect(),
        None | Some(Value::Null) => Vec::new(),
        Some(other) => panic!("inputRequests must be an object, got {other}"),
    }
}

/// All the text of a result's text content blocks, joined by newlines.
pub fn text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .unwrap_or_else(|| panic!("a complete tool result needs a content array: {result}"))
        .iter()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a complete result is flagged `isError: true`.
pub fn is_error(result: &Value) -> bool {
    result.get("isError").and_then(Value::as_bool) == Some(true)
}

/// An elicitation answer.
pub fn elicit(action: &str, content: Option<Value>) -> Value {
    match content {
        Some(c) => json!({"action": action, "content": c}),
        None => json!({"action": action}),
    }
}

/// A sampling answer with text.
pub fn sampled(text: &str) -> Value {
    json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": "e2e-model-1",
        "stopReason": "endTurn",
    })
}

/// A roots answer.
pub fn roots(list: &[(&str, &str)]) -> Value {
    json!({
        "roots": list.iter().map(|(uri, name)| json!({"uri": uri, "name": name})).collect::<Vec<_>>()
    })
}
