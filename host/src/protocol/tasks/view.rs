//! A stored task as the wire shows it: `Task` in a `CreateTaskResult`,
//! `DetailedTask` in `tasks/get` and `notifications/tasks`.

use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Map, Value, json};

use crate::tasks::{TaskRecord, TaskStatus};

/// The `Task` members: id, status, times, `ttlMs`, `pollIntervalMs`.
fn task(record: &TaskRecord) -> Map<String, Value> {
    let mut task = Map::new();
    task.insert("taskId".into(), json!(record.id));
    task.insert("status".into(), json!(record.status.as_str()));
    if let Some(message) = &record.status_message {
        task.insert("statusMessage".into(), json!(message));
    }
    task.insert("createdAt".into(), json!(iso(record.created_at_ms)));
    task.insert("lastUpdatedAt".into(), json!(iso(record.updated_at_ms)));
    task.insert(
        "ttlMs".into(),
        json!(record.expires_at_ms.saturating_sub(record.created_at_ms)),
    );
    if let Some(poll) = record.poll_interval_ms {
        task.insert("pollIntervalMs".into(), json!(poll));
    }
    task
}

/// The members of a `CreateTaskResult` (an encoded object).
pub(super) fn created(record: &TaskRecord) -> String {
    Value::Object(task(record)).to_string()
}

/// A `DetailedTask`: the task, plus its input requests, result or error
/// as its status has them.
pub(super) fn detailed(record: &TaskRecord) -> Value {
    let mut detailed = task(record);
    let parsed = |text: &Option<String>| {
        text.as_deref()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
    };
    match record.status {
        TaskStatus::InputRequired => {
            let requests = parsed(&record.input_requests).unwrap_or_else(|| json!({}));
            detailed.insert("inputRequests".into(), requests);
        }
        TaskStatus::Completed => {
            if let Some(result) = parsed(&record.outcome) {
                detailed.insert("result".into(), result);
            }
        }
        TaskStatus::Failed => {
            if let Some(error) = parsed(&record.outcome) {
                detailed.insert("error".into(), error);
            }
        }
        TaskStatus::Working | TaskStatus::Cancelled => {}
    }
    Value::Object(detailed)
}

/// What the input request keys of round `round` start with: a task's keys
/// are never reused over its lifetime, though a tool may use the same key
/// in two rounds.
pub(super) fn key_prefix(round: u32) -> String {
    format!("r{round}.")
}

/// Unix milliseconds as ISO 8601 (UTC, milliseconds).
fn iso(ms: u64) -> String {
    humantime::format_rfc3339_millis(UNIX_EPOCH + Duration::from_millis(ms)).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(status: TaskStatus) -> TaskRecord {
        TaskRecord {
            id: "t1".into(),
            owner: "token:alice".into(),
            tool: "slow".into(),
            status,
            status_message: None,
            created_at_ms: 1_764_000_000_000,
            updated_at_ms: 1_764_000_001_500,
            expires_at_ms: 1_764_003_600_000,
            poll_interval_ms: Some(500),
            round: 2,
            attempts: 0,
            sealed: vec![9; 40],
            input_requests: Some(r#"{"r2.confirm":{"method":"roots/list","params":{}}}"#.into()),
            outcome: Some(r#"{"resultType":"complete","content":[]}"#.into()),
            runnable: false,
            due_since_ms: 0,
            lease: None,
            version: 3,
        }
    }

    #[test]
    fn each_status_shows_what_belongs_to_it_and_never_the_sealed_state() {
        let working = detailed(&record(TaskStatus::Working));
        assert_eq!(
            working,
            json!({"taskId": "t1", "status": "working", "createdAt": "2025-11-24T16:00:00.000Z",
                   "lastUpdatedAt": "2025-11-24T16:00:01.500Z", "ttlMs": 3_600_000,
                   "pollIntervalMs": 500})
        );
        let asking = detailed(&record(TaskStatus::InputRequired));
        assert_eq!(
            asking["inputRequests"]["r2.confirm"]["method"],
            "roots/list"
        );
        assert!(asking.get("result").is_none());
        let done = detailed(&record(TaskStatus::Completed));
        assert_eq!(done["result"]["content"], json!([]));
        assert!(done.get("inputRequests").is_none());
        let failed = detailed(&record(TaskStatus::Failed));
        assert!(failed.get("error").is_some() && failed.get("result").is_none());
        for status in [TaskStatus::Working, TaskStatus::Completed] {
            let text = detailed(&record(status)).to_string();
            assert!(!text.contains("sealed") && !text.contains("requestState"));
        }
        let created: Value = serde_json::from_str(&created(&record(TaskStatus::Working))).unwrap();
        assert_eq!(created["taskId"], "t1");
        assert!(created.get("result").is_none() && created.get("inputRequests").is_none());
    }
}
