use std::time::Instant;

use serde_json::{Value, json};

use super::*;
use crate::protocol::jsonrpc::RpcError;

fn request(method: &str, params: Value) -> Request {
    let Value::Object(params) = params else {
        panic!("params must be an object")
    };
    Request {
        id: json!(1),
        method: method.to_owned(),
        params,
    }
}

fn meta() -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" })
}

/// Only `sha256` (a tool) and `greet` (a prompt) are loaded.
fn loaded(tool: bool, name: &str) -> bool {
    if tool {
        name == "sha256"
    } else {
        name == "greet"
    }
}

fn complete(members: &str) -> Answer {
    Answer::Complete(crate::protocol::answer::Complete::new(members.to_owned()))
}

#[test]
fn a_loaded_tool_is_a_label_and_success_has_no_error_type() {
    let call = request("tools/call", json!({"name": "sha256", "_meta": meta()}));
    let labels = operation_labels(&call, &complete(r#"{"content":[]}"#), loaded);
    assert_eq!(
        labels,
        OperationLabels {
            mcp_method_name: "tools/call",
            gen_ai_tool_name: Some("sha256".to_owned()),
            gen_ai_prompt_name: None,
            error_type: None,
            mcp_protocol_version: Some("2026-07-28"),
        }
    );
}

#[test]
fn names_methods_versions_and_codes_a_client_makes_up_are_not_label_values() {
    let call = request(
        "tools/call",
        json!({"name": "no-such-tool", "_meta": {"io.modelcontextprotocol/protocolVersion": "1999-01-01"}}),
    );
    let unknown = Answer::Error(RpcError::invalid_params("Unknown tool: no-such-tool"));
    let labels = operation_labels(&call, &unknown, loaded);
    assert_eq!(labels.gen_ai_tool_name, None);
    assert_eq!(labels.error_type.as_deref(), Some("-32602"));
    assert_eq!(labels.mcp_protocol_version, None);

    let odd = request("x/made-up", json!({"name": "sha256"}));
    let own_code = Answer::Error(RpcError::new(12345, "a code of a component's own"));
    let labels = operation_labels(&odd, &own_code, loaded);
    assert_eq!(labels.mcp_method_name, "_OTHER");
    assert_eq!(
        labels.gen_ai_tool_name, None,
        "only tools/call names a tool"
    );
    assert_eq!(labels.error_type.as_deref(), Some("_OTHER"));
}

#[test]
fn a_prompt_is_named_only_by_prompts_get() {
    let get = request("prompts/get", json!({"name": "greet"}));
    let labels = operation_labels(&get, &complete("{}"), loaded);
    assert_eq!(labels.gen_ai_prompt_name.as_deref(), Some("greet"));
    assert_eq!(labels.gen_ai_tool_name, None);
    let get = request("prompts/get", json!({"name": "sha256"}));
    let labels = operation_labels(&get, &complete("{}"), loaded);
    assert_eq!(labels.gen_ai_prompt_name, None, "a tool, not a prompt");
}

#[test]
fn an_is_error_result_is_a_tool_error() {
    let result = crate::runtime::wit::CallResult {
        content: vec![],
        structured_content: Some(r#"{"isError":true}"#.to_owned()),
        is_error: true,
    };
    let encoded = |result: &crate::runtime::wit::CallResult| {
        serde_json::to_string(&crate::protocol::wire::call_result(result).unwrap()).unwrap()
    };
    let call = request("tools/call", json!({"name": "sha256"}));
    let labels = operation_labels(&call, &complete(&encoded(&result)), loaded);
    assert_eq!(labels.error_type.as_deref(), Some("tool_error"));
    let fine = crate::runtime::wit::CallResult {
        is_error: false,
        ..result
    };
    let labels = operation_labels(&call, &complete(&encoded(&fine)), loaded);
    assert_eq!(
        labels.error_type, None,
        "structured content that says isError is not the result's isError"
    );
}

#[test]
fn state_reasons_are_kinds_not_details() {
    let expired = StateError::Expired {
        expires_at: 1,
        now: 2,
    };
    assert_eq!(state_reason(&expired), "expired");
    assert_eq!(state_reason(&StateError::Forged), "forged");
}

#[test]
fn rendering_shows_every_family_with_its_labels() {
    let running = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(3));
    let read = running.clone();
    let metrics = Metrics::new(vec![SampledGauge {
        name: "airlock_instances_busy",
        help: "running",
        read: Box::new(move || read.load(std::sync::atomic::Ordering::Relaxed)),
    }]);
    let call = request("tools/call", json!({"name": "sha256", "_meta": meta()}));
    metrics.operation(
        operation_labels(&call, &complete("{}"), loaded),
        Instant::now(),
    );
    metrics
        .limit_hits
        .get_or_create(&KindLabel {
            kind: Limit::Deadline.label(),
        })
        .inc();
    metrics.mrtr_rounds.observe(3.0);
    let text = metrics.render();
    for line in [
        "# TYPE mcp_server_operation_duration_seconds histogram",
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"sha256\",gen_ai_prompt_name=\"\",error_type=\"\",mcp_protocol_version=\"2026-07-28\"} 1",
        "airlock_limit_hits_total{kind=\"deadline\"} 1",
        "airlock_mrtr_rounds_bucket{le=\"2.0\"} 0",
        "airlock_mrtr_rounds_bucket{le=\"3.0\"} 1",
        "airlock_instances_busy 3",
        "# TYPE airlock_calls_refused_busy counter",
        "airlock_sessions_open 0",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing {line:?} in:\n{text}"
        );
    }
    running.store(5, std::sync::atomic::Ordering::Relaxed);
    assert!(
        metrics
            .render()
            .lines()
            .any(|l| l == "airlock_instances_busy 5"),
        "a sampled gauge is read at each scrape"
    );
}

#[test]
fn the_series_of_names_no_longer_loaded_are_forgotten() {
    let metrics = Metrics::new(Vec::new());
    let was_loaded = |_: bool, _: &str| true;
    for (method, name) in [
        ("tools/call", "sha256"),
        ("tools/call", "renamed-away"),
        ("prompts/get", "greet"),
        ("prompts/get", "removed"),
        ("tools/list", "sha256"),
    ] {
        let request = request(method, json!({"name": name, "_meta": meta()}));
        let labels = operation_labels(&request, &complete("{}"), was_loaded);
        metrics.operation(labels, Instant::now());
    }
    metrics
        .operations
        .retain(|labels| labels.names_loaded(loaded));
    let text = metrics.render();
    for kept in [
        "gen_ai_tool_name=\"sha256\"",
        "gen_ai_prompt_name=\"greet\"",
        "mcp_method_name=\"tools/list\"",
    ] {
        assert!(text.contains(kept), "{kept} was forgotten:\n{text}");
    }
    for gone in ["renamed-away", "removed"] {
        assert!(!text.contains(gone), "{gone} is still a label:\n{text}");
    }
}
