use std::time::Instant;

use super::*;

/// A `tools/call` of `sha256` that succeeded.
fn sha256_call() -> Operation<'static> {
    Operation {
        method: Some("tools/call"),
        tool: Some("sha256"),
        prompt: None,
        error: None,
        version: Some("2026-07-28"),
        outcome: "ok",
    }
}

#[test]
fn error_types_are_codes_other_or_tool_error() {
    let with = |error| {
        OperationLabels::of(&Operation {
            error: Some(error),
            ..sha256_call()
        })
    };
    assert_eq!(
        with(ErrorType::Code(-32602)).error_type.as_deref(),
        Some("-32602")
    );
    assert_eq!(with(ErrorType::Other).error_type.as_deref(), Some("_OTHER"));
    assert_eq!(
        with(ErrorType::Tool).error_type.as_deref(),
        Some("tool_error")
    );
    let unknown_method = Operation {
        method: None,
        ..sha256_call()
    };
    assert_eq!(
        OperationLabels::of(&unknown_method).mcp_method_name,
        "_OTHER"
    );
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
    metrics.operation(OperationLabels::of(&sha256_call()), Instant::now());
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
        "mcp_server_operation_duration_seconds_count{mcp_method_name=\"tools/call\",gen_ai_tool_name=\"sha256\",gen_ai_prompt_name=\"\",error_type=\"\",mcp_protocol_version=\"2026-07-28\",airlock_outcome=\"ok\"} 1",
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
    for (method, tool, prompt) in [
        ("tools/call", Some("sha256"), None),
        ("tools/call", Some("renamed-away"), None),
        ("prompts/get", None, Some("greet")),
        ("prompts/get", None, Some("removed")),
        ("tools/list", None, None),
    ] {
        let operation = Operation {
            method: Some(method),
            tool,
            prompt,
            ..sha256_call()
        };
        metrics.operation(OperationLabels::of(&operation), Instant::now());
    }
    let loaded = |name: Name<'_>| matches!(name, Name::Tool("sha256") | Name::Prompt("greet"));
    metrics
        .operations
        .retain(|labels| labels.names_kept(loaded));
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
