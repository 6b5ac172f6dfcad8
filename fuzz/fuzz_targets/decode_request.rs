//! Fuzz target: decoding one JSON-RPC / MCP message from untrusted bytes.
//!
//! Every input goes through `jsonrpc::decode`. A request (and a
//! notification) then goes through the envelope check (`check_envelope`,
//! stdio: no headers; and again with HTTP headers that mirror the body), the
//! `Mcp-Name` check and, when `params.inputResponses` is present, through
//! `wire::input_responses`. Nothing may panic, and:
//!
//! - every answer Airlock would write (result or error) is valid JSON that
//!   echoes the request id;
//! - headers that mirror the body exactly never change the envelope's verdict;
//! - an `Mcp-Name` equal to the body value, literally or Base64-sentinel
//!   encoded, is always accepted.

#![no_main]

use airlock::protocol::envelope::{self, MirroredHeaders};
use airlock::protocol::jsonrpc::{self, Incoming};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

/// `airlock::protocol::wire` is `pub(crate)`, so its source is compiled here a
/// second time, with the checks of guest JSON it uses (`guest_json`, private
/// too), against the public types it names as `crate::runtime` and
/// `crate::registry`: the same code, without widening the host's API.
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

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

fn check_params(method: &str, params: &Map<String, Value>) {
    let _ = envelope::opts_in_to_notifications(params);

    // stdio: no headers.
    let plain = envelope::check_envelope(method, params, None);
    if let Err(e) = &plain {
        assert!(e.code < 0, "error codes are negative: {e:?}");
        let body = jsonrpc::encode_error(Some(&json!(1)), e);
        serde_json::from_slice::<Value>(&body).expect("an error response is JSON");
    }

    // HTTP, headers mirroring the body exactly: same verdict.
    let version = params
        .get("_meta")
        .and_then(|m| m.get(META_PROTOCOL_VERSION))
        .and_then(Value::as_str);
    let name = params
        .get("name")
        .or_else(|| params.get("uri"))
        .and_then(Value::as_str);
    let mirrored = MirroredHeaders {
        protocol_version: version,
        method: Some(method),
        name,
        all: None,
    };
    let with_headers = envelope::check_envelope(method, params, Some(&mirrored));
    assert_eq!(
        plain.is_ok(),
        with_headers.is_ok(),
        "mirrored headers changed the verdict: {plain:?} vs {with_headers:?}"
    );
    if version.is_none() {
        assert!(with_headers.is_err());
    }

    if let Some(name) = name {
        let _ = envelope::decode_header_value(name);
        if !name.starts_with("=?base64?") {
            envelope::check_name_header(Some(&mirrored), name)
                .expect("a literal Mcp-Name equal to the body is accepted");
        }
        let encoded = format!("=?base64?{}?=", STANDARD.encode(name));
        let sentinel = MirroredHeaders {
            name: Some(&encoded),
            ..mirrored
        };
        envelope::check_name_header(Some(&sentinel), name)
            .expect("a Base64-sentinel Mcp-Name equal to the body is accepted");
    }

    if let Some(responses) = params.get("inputResponses") {
        match wire::input_responses(responses) {
            Ok(decoded) => {
                let object = responses.as_object().expect("only an object decodes");
                assert_eq!(decoded.len(), object.len());
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

/// The response starts with the id exactly as the decoder kept it. (Compared
/// as text: re-parsing a float id here would test serde_json's best-effort
/// float parsing, not Airlock.)
fn assert_echoes(body: &[u8], id: Option<&Value>) {
    let expected = match id {
        Some(id) => format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},"),
        None => "{\"jsonrpc\":\"2.0\",\"error\":".to_owned(),
    };
    assert!(
        body.starts_with(expected.as_bytes()),
        "the id is echoed: {expected} / {}",
        String::from_utf8_lossy(body)
    );
}

fuzz_target!(|data: &[u8]| {
    match jsonrpc::decode(data) {
        Ok(Incoming::Request(request)) => {
            assert!(request.id.is_string() || request.id.is_number());
            let body = jsonrpc::encode_result(&request.id, &json!({}));
            serde_json::from_slice::<Value>(&body).expect("a result is JSON");
            assert_echoes(&body, Some(&request.id));
            check_params(&request.method, &request.params);
        }
        Ok(Incoming::Notification(notification)) => {
            check_params(&notification.method, &notification.params);
        }
        Ok(Incoming::Response(response)) => {
            assert!(response.id.is_string() || response.id.is_number());
        }
        Err(e) => {
            assert!(
                e.id.as_ref()
                    .is_none_or(|id| id.is_string() || id.is_number()),
                "an error only carries a valid id"
            );
            let body = jsonrpc::encode_error(e.id.as_ref(), &e.error);
            let echoed: Value = serde_json::from_slice(&body).expect("an error is JSON");
            assert_echoes(&body, e.id.as_ref());
            assert_eq!(echoed["error"]["code"], e.error.code);
        }
    }
});
