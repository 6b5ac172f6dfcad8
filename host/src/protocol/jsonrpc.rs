//! JSON-RPC 2.0 framing: telling requests, notifications and responses apart,
//! the error codes MCP uses, and writing responses.
//!
//! Request ids are kept as the exact JSON value the client sent (a string,
//! or an integer within 64 bits, as MCP's `RequestId` allows) so that every
//! response echoes them unchanged. Other numbers (fractions, integers too
//! large to echo exactly) are refused.

use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};

use super::outcome::Outcome;

/// JSON-RPC and MCP error codes.
pub mod codes {
    /// The body is not valid JSON.
    pub const PARSE_ERROR: i32 = -32700;
    /// Not a JSON-RPC request object (also: a batch).
    pub const INVALID_REQUEST: i32 = -32600;
    /// Unknown, removed or un-advertised method.
    pub const METHOD_NOT_FOUND: i32 = -32601;
    /// Bad parameters: missing `_meta`, unknown tool, bad `requestState`, ...
    pub const INVALID_PARAMS: i32 = -32602;
    /// An unexpected server failure.
    pub const INTERNAL_ERROR: i32 = -32603;
    /// A required HTTP header is missing, malformed or contradicts the body.
    pub const HEADER_MISMATCH: i32 = -32020;
    /// The request needs a client capability it did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i32 = -32021;
    /// The requested protocol version is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i32 = -32022;
    /// Airlock's own, outside the ranges JSON-RPC and MCP reserve: a quota
    /// of the caller is used up (a rate limit, its sessions).
    pub const QUOTA_EXCEEDED: i32 = -31429;
    /// Airlock's own: the caller may see the item but not use it.
    pub const ACCESS_DENIED: i32 = -31403;

    /// Every code above: the codes Airlock answers with of its own accord
    /// (a component may choose others for its errors).
    pub const ANSWERED: &[i32] = &[
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        INTERNAL_ERROR,
        HEADER_MISMATCH,
        MISSING_REQUIRED_CLIENT_CAPABILITY,
        UNSUPPORTED_PROTOCOL_VERSION,
        QUOTA_EXCEEDED,
        ACCESS_DENIED,
    ];
}

/// A JSON-RPC error, with the HTTP status Streamable HTTP pairs it with.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The JSON-RPC error code.
    pub code: i32,
    /// A message for the client's user or developer.
    pub message: String,
    /// Structured details, when the code defines them.
    pub data: Option<Value>,
    /// HTTP status on Streamable HTTP (ignored on stdio).
    pub http_status: u16,
    /// When the client may try again, if known: `Retry-After` on
    /// Streamable HTTP.
    pub retry_after: Option<Duration>,
    /// A `WWW-Authenticate` challenge on Streamable HTTP, for an error that
    /// a stronger token would avoid (behind a thin pointer: errors travel in
    /// `Result`s, which stay small).
    pub challenge: Option<Arc<String>>,
    /// How the request ended, for observers: by default what the code
    /// says; its maker says when it knows better ([`RpcError::with_outcome`]).
    pub outcome: Outcome,
}

impl RpcError {
    /// An error with the given code and message, answered with HTTP 200.
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
            http_status: 200,
            retry_after: None,
            challenge: None,
            outcome: outcome_of_code(code),
        }
    }

    /// The same error, ending its request with `outcome`.
    pub fn with_outcome(mut self, outcome: Outcome) -> Self {
        self.outcome = outcome;
        self
    }

    /// Attaches `data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// Sets the HTTP status.
    pub fn with_status(mut self, status: u16) -> Self {
        self.http_status = status;
        self
    }

    /// Says when the client may try again.
    pub fn with_retry_after(mut self, after: Duration) -> Self {
        self.retry_after = Some(after);
        self
    }

    /// The same error with a `WWW-Authenticate` challenge.
    pub fn with_challenge(mut self, challenge: String) -> Self {
        self.challenge = Some(Arc::new(challenge));
        self
    }

    /// -31429, HTTP 429: a quota of the caller is used up.
    pub fn quota_exceeded(message: impl Into<String>) -> Self {
        Self::new(codes::QUOTA_EXCEEDED, message).with_status(429)
    }

    /// -32700, HTTP 400.
    pub fn parse_error(message: impl Into<String>) -> Self {
        Self::new(codes::PARSE_ERROR, message).with_status(400)
    }

    /// -32600, HTTP 400.
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_REQUEST, message).with_status(400)
    }

    /// -32601, HTTP 404.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            codes::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
        .with_status(404)
    }

    /// -32602, HTTP 200: bad parameters of a well-formed request.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }

    /// -32603, HTTP 500.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message).with_status(500)
    }

    /// -32603, HTTP 503: the server cannot serve the request now (busy, a
    /// store down, still loading); the client may try again.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(codes::INTERNAL_ERROR, message)
            .with_status(503)
            .with_outcome(Outcome::Unavailable)
    }

    /// -32020, HTTP 400.
    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(codes::HEADER_MISMATCH, message).with_status(400)
    }
}

/// The outcome of an error with `code` unless its maker says otherwise:
/// refusals by their code; a code Airlock does not answer with is one a
/// component chose, so the component failed.
fn outcome_of_code(code: i32) -> Outcome {
    match code {
        codes::ACCESS_DENIED => Outcome::Denied,
        codes::QUOTA_EXCEEDED => Outcome::OverQuota,
        codes::METHOD_NOT_FOUND => Outcome::Unknown,
        codes::INTERNAL_ERROR => Outcome::Internal,
        code if codes::ANSWERED.contains(&code) => Outcome::Invalid,
        _ => Outcome::Failed,
    }
}

/// One incoming JSON-RPC message.
#[derive(Debug)]
pub enum Incoming {
    /// A request: has a method and an id.
    Request(Request),
    /// A notification: has a method, no id.
    Notification(Notification),
    /// A response to a server-to-client request (only a legacy session's
    /// client sends them: a 2026-07-28 server sends no requests).
    Response(Response),
}

impl Incoming {
    /// The id an error reply to this message echoes: a request's own id;
    /// none for a notification or a response.
    pub fn request_id(&self) -> Option<&Value> {
        match self {
            Incoming::Request(request) => Some(&request.id),
            Incoming::Notification(_) | Incoming::Response(_) => None,
        }
    }
}

/// A JSON-RPC response from the client to a request of the server.
#[derive(Debug)]
pub struct Response {
    /// The id of the server's request it answers.
    pub id: Value,
    /// `result`, or the `error` object.
    pub outcome: Result<Value, Value>,
}

/// A JSON-RPC request.
#[derive(Debug)]
pub struct Request {
    /// The id exactly as sent (a string or a number).
    pub id: Value,
    /// The method name.
    pub method: String,
    /// `params`, an object (absent params read as an empty object).
    pub params: Map<String, Value>,
}

/// A JSON-RPC notification.
#[derive(Debug)]
pub struct Notification {
    /// The method name.
    pub method: String,
    /// `params`, an object (absent params read as an empty object).
    pub params: Map<String, Value>,
}

/// A message that could not be decoded, with the id when one could be read.
#[derive(Debug)]
pub struct DecodeError {
    /// The request id, when the message had a valid one.
    pub id: Option<Value>,
    /// The error to answer.
    pub error: RpcError,
}

/// Decodes one JSON-RPC message from raw bytes.
pub fn decode(bytes: &[u8]) -> Result<Incoming, DecodeError> {
    let fail = |id: Option<Value>, error: RpcError| DecodeError { id, error };
    let text = std::str::from_utf8(bytes).map_err(|_| {
        fail(
            None,
            RpcError::parse_error("Parse error: the message is not valid UTF-8"),
        )
    })?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| fail(None, RpcError::parse_error(format!("Parse error: {e}"))))?;
    let mut object = match value {
        Value::Object(object) => object,
        Value::Array(_) => {
            return Err(fail(
                None,
                RpcError::invalid_request("Invalid Request: batches are not supported"),
            ));
        }
        _ => {
            return Err(fail(
                None,
                RpcError::invalid_request("Invalid Request: expected a JSON-RPC object"),
            ));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(id @ Value::String(_)) => Some(id),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            return Err(fail(
                None,
                RpcError::invalid_request(
                    "Invalid Request: id must be a string or an integer (within 64 bits)",
                ),
            ));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(fail(
            id,
            RpcError::invalid_request("Invalid Request: jsonrpc must be \"2.0\""),
        ));
    }
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        Some(_) => {
            return Err(fail(
                id,
                RpcError::invalid_request("Invalid Request: method must be a string"),
            ));
        }
        None if object.contains_key("result") || object.contains_key("error") => {
            let Some(id) = id else {
                return Err(fail(
                    None,
                    RpcError::invalid_request("Invalid Request: a response needs an id"),
                ));
            };
            let outcome = match (object.remove("result"), object.remove("error")) {
                (Some(result), None) => Ok(result),
                (None, Some(error)) => Err(error),
                _ => {
                    return Err(fail(
                        Some(id),
                        RpcError::invalid_request(
                            "Invalid Request: a response has either result or error",
                        ),
                    ));
                }
            };
            return Ok(Incoming::Response(Response { id, outcome }));
        }
        None => {
            return Err(fail(
                id,
                RpcError::invalid_request("Invalid Request: missing method"),
            ));
        }
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => {
            return Err(fail(
                id,
                RpcError::invalid_request("Invalid Request: params must be an object"),
            ));
        }
    };
    Ok(match id {
        Some(id) => Incoming::Request(Request { id, method, params }),
        None => Incoming::Notification(Notification { method, params }),
    })
}

/// Reads a required string parameter.
pub fn required_str<'a>(params: &'a Map<String, Value>, name: &str) -> Result<&'a str, RpcError> {
    match params.get(name) {
        Some(Value::String(value)) => Ok(value),
        Some(_) => Err(RpcError::invalid_params(format!(
            "Invalid params: {name} must be a string"
        ))),
        None => Err(RpcError::invalid_params(format!(
            "Invalid params: missing {name}"
        ))),
    }
}

/// A success response.
#[derive(Serialize)]
struct Success<'a, R> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: &'a R,
}

/// Serializes a success response.
pub fn encode_result(id: &Value, result: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(&Success {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_else(|e| encoding_failed(id, &e))
}

/// Why a value was not encoded within a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// The encoding passed the limit; nothing past it was allocated.
    #[error("the encoded reply is larger than {limit} bytes")]
    TooLarge {
        /// The limit, in bytes.
        limit: usize,
    },
    /// The value cannot be encoded at all.
    #[error("cannot encode the result: {0}")]
    Invalid(String),
}

/// `value` as JSON text, stopping as soon as the encoding passes `limit`
/// bytes: the buffer never grows past the limit, whatever `value` holds.
pub fn encode_within(value: &impl Serialize, limit: usize) -> Result<String, EncodeError> {
    let mut out = Capped {
        // Most results are small: start with room for one, not with growing
        // from nothing.
        bytes: Vec::with_capacity(limit.min(INITIAL_ENCODE_CAPACITY)),
        limit,
        overflowed: false,
    };
    match serde_json::to_writer(&mut out, value) {
        Ok(()) => String::from_utf8(out.bytes).map_err(|e| EncodeError::Invalid(e.to_string())),
        Err(_) if out.overflowed => Err(EncodeError::TooLarge { limit }),
        Err(e) => Err(EncodeError::Invalid(e.to_string())),
    }
}

/// Bytes [`encode_within`] reserves before it starts writing.
const INITIAL_ENCODE_CAPACITY: usize = 512;

/// The error reply for a result that cannot be encoded.
fn encoding_failed(id: &Value, error: &serde_json::Error) -> Vec<u8> {
    encode_error(
        Some(id),
        &RpcError::internal(format!("cannot encode result: {error}")),
    )
}

/// A buffer that refuses writes past `limit` bytes.
struct Capped {
    bytes: Vec<u8>,
    limit: usize,
    overflowed: bool,
}

impl std::io::Write for Capped {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.bytes.len() + data.len() > self.limit {
            self.overflowed = true;
            return Err(std::io::Error::other("over the limit"));
        }
        self.bytes.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Serializes an error response; `id` is omitted when unknown.
pub fn encode_error(id: Option<&Value>, error: &RpcError) -> Vec<u8> {
    #[derive(Serialize)]
    struct Body<'a> {
        code: i32,
        message: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        data: Option<&'a Value>,
    }
    #[derive(Serialize)]
    struct Failure<'a> {
        jsonrpc: &'static str,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<&'a Value>,
        error: Body<'a>,
    }
    let failure = Failure {
        jsonrpc: "2.0",
        id,
        error: Body {
            code: error.code,
            message: &error.message,
            data: error.data.as_ref(),
        },
    };
    serde_json::to_vec(&failure).expect("an error body always serializes")
}

/// Serializes a notification.
pub fn encode_notification(method: &str, params: &impl Serialize) -> Vec<u8> {
    #[derive(Serialize)]
    struct Note<'a, P> {
        jsonrpc: &'static str,
        method: &'a str,
        params: &'a P,
    }
    serde_json::to_vec(&Note {
        jsonrpc: "2.0",
        method,
        params,
    })
    .expect("notification params always serialize")
}

/// A success response whose result is already encoded (a JSON value),
/// copied as it is.
pub fn encode_raw_result(id: &Value, result: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(result.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    serde_json::to_writer(&mut out, id).expect("an id always encodes");
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.as_bytes());
    out.push(b'}');
    out
}

/// A request of the server to the client (legacy sessions only) whose
/// params are already encoded (a JSON object), copied as they are.
pub fn encode_raw_request(id: u64, method: &str, params: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(params.len() + method.len() + 48);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id.to_string().as_bytes());
    out.extend_from_slice(b",\"method\":");
    serde_json::to_writer(&mut out, method).expect("a string always encodes");
    out.extend_from_slice(b",\"params\":");
    out.extend_from_slice(params.as_bytes());
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_told_by_their_code_and_only_a_components_own_code_is_a_failure() {
        assert_eq!(outcome_of_code(codes::ACCESS_DENIED), Outcome::Denied);
        assert_eq!(outcome_of_code(codes::QUOTA_EXCEEDED), Outcome::OverQuota);
        assert_eq!(outcome_of_code(codes::METHOD_NOT_FOUND), Outcome::Unknown);
        assert_eq!(outcome_of_code(codes::INVALID_PARAMS), Outcome::Invalid);
        assert_eq!(outcome_of_code(codes::HEADER_MISMATCH), Outcome::Invalid);
        assert_eq!(outcome_of_code(codes::INTERNAL_ERROR), Outcome::Internal);
        assert_eq!(outcome_of_code(12345), Outcome::Failed);
        assert_eq!(
            RpcError::unavailable("busy").outcome,
            Outcome::Unavailable,
            "a 503 is the server's condition, not an internal failure"
        );
    }

    #[test]
    fn encoding_within_a_limit_stops_at_the_limit() {
        let value = serde_json::json!({"text": "x".repeat(1000)});
        let whole = serde_json::to_string(&value).unwrap();
        assert_eq!(encode_within(&value, whole.len()).unwrap(), whole);
        assert_eq!(
            encode_within(&value, whole.len() - 1),
            Err(EncodeError::TooLarge {
                limit: whole.len() - 1
            })
        );
    }

    fn error_of(bytes: &[u8]) -> DecodeError {
        match decode(bytes) {
            Err(e) => e,
            Ok(m) => panic!("expected an error, got {m:?}"),
        }
    }

    #[test]
    fn decodes_requests_notifications_and_responses() {
        let Incoming::Request(r) =
            decode(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#).unwrap()
        else {
            panic!("not a request")
        };
        assert_eq!(
            (r.id, r.method.as_str(), r.params.len()),
            (Value::from(7), "tools/list", 0)
        );
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#).unwrap(),
            Incoming::Notification(n) if n.params["requestId"] == 1
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":"a","result":{}}"#).unwrap(),
            Incoming::Response(r) if r.id == "a" && r.outcome == Ok(serde_json::json!({}))
        ));
        assert!(matches!(
            decode(br#"{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}"#).unwrap(),
            Incoming::Response(r) if r.id == 3 && r.outcome.is_err()
        ));
        assert!(decode(br#"{"jsonrpc":"2.0","result":{}}"#).is_err());
        assert!(decode(br#"{"jsonrpc":"2.0","id":1,"result":{},"error":{}}"#).is_err());
    }

    #[test]
    fn keeps_large_and_string_ids_exactly() {
        let Incoming::Request(r) =
            decode(br#"{"jsonrpc":"2.0","id":1763820000123,"method":"m"}"#).unwrap()
        else {
            panic!()
        };
        assert_eq!(
            String::from_utf8(encode_result(&r.id, &serde_json::json!({}))).unwrap(),
            r#"{"jsonrpc":"2.0","id":1763820000123,"result":{}}"#
        );
    }

    #[test]
    fn rejects_bad_messages_with_the_right_codes() {
        assert_eq!(error_of(b"{not json").error.code, codes::PARSE_ERROR);
        assert_eq!(error_of(b"\xff\xfe").error.code, codes::PARSE_ERROR);
        assert_eq!(error_of(b"[]").error.code, codes::INVALID_REQUEST);
        assert_eq!(error_of(b"42").error.code, codes::INVALID_REQUEST);
        assert_eq!(
            error_of(br#"{"jsonrpc":"2.0","id":null,"method":"m"}"#)
                .error
                .code,
            codes::INVALID_REQUEST
        );
        for id in ["1.5", "123456789012345678901234567890", "-1e3"] {
            let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"m"}}"#);
            let e = error_of(body.as_bytes());
            assert_eq!((e.error.code, e.id), (codes::INVALID_REQUEST, None), "{id}");
        }
        let e = error_of(br#"{"jsonrpc":"1.0","id":3,"method":"m"}"#);
        assert_eq!(
            (e.error.code, e.id),
            (codes::INVALID_REQUEST, Some(Value::from(3)))
        );
        assert_eq!(
            error_of(br#"{"jsonrpc":"2.0","id":3,"method":5}"#)
                .error
                .code,
            codes::INVALID_REQUEST
        );
        assert_eq!(
            error_of(br#"{"jsonrpc":"2.0","id":3,"method":"m","params":[1]}"#)
                .error
                .code,
            codes::INVALID_REQUEST
        );
        assert_eq!(
            error_of(br#"{"jsonrpc":"2.0","id":3}"#).error.code,
            codes::INVALID_REQUEST
        );
    }

    #[test]
    fn error_without_id_omits_it() {
        let bytes = encode_error(None, &RpcError::parse_error("x"));
        assert_eq!(
            String::from_utf8(bytes).unwrap(),
            r#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"x"}}"#
        );
    }
}
