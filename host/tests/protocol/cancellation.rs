//! Cancellation: `notifications/cancelled` stops the request it names,
//! which then gets no reply, while everything else goes on: on stdio for
//! 2026-07-28 requests and for the session's requests (even a cancellation
//! right behind its request), on HTTP for a session's call; and DELETE
//! ends only the calls of the session it ends.

use airlock_e2e::legacy::{assert_stream_ends, initialize_params, legacy_caps};
use airlock_e2e::mcp::{ToolCall, complete, elicit, is_error, request};
use airlock_e2e::sse::Events;
use airlock_e2e::{McpClient, Next};
use serde_json::{Value, json};

use crate::sessions::{
    accept_elicitation, assert_elicitation_result, assert_ping, assert_session_not_found,
    start_elicitation,
};
use crate::support::{HANG_GUARD, Host, Stdio};

/// A cancellation of request `id`.
fn cancelled(id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "changed my mind"},
    })
}

/// A sleep far longer than any test waits, bounded by the call timeout
/// (10 s): if its cancellation were lost, its reply would come.
fn long_sleep() -> Value {
    ToolCall::new("sleep", json!({"ms": 30_000})).params()
}

/// Asserts no response in `lines` answers any of `ids`.
#[track_caller]
fn assert_unanswered(lines: &[String], ids: &[Value]) {
    for line in lines {
        let message: Value = serde_json::from_str(line).expect("JSON lines");
        let is_response = message.get("method").is_none();
        assert!(
            !(is_response && ids.contains(&message["id"])),
            "a cancelled request got a reply: {line}"
        );
    }
}

/// Asserts the stdio connection still serves `sha256`.
#[track_caller]
fn assert_serving(stdio: &Stdio) {
    let response = stdio.call(&ToolCall::new("sha256", json!({"text": "still here"})));
    assert!(!is_error(complete(&response)), "{response}");
}

#[test]
fn a_cancelled_stdio_request_gets_no_reply_and_the_rest_goes_on() {
    let host = Host::start(&["probe", "hash"]);
    let stdio = host.stdio();
    let doomed = json!("sleep-to-cancel");
    stdio.send(&request(doomed.clone(), "tools/call", long_sleep()));
    let quick = stdio.send_request(
        "tools/call",
        ToolCall::new("sha256", json!({"text": "x"})).params(),
    );
    complete(&stdio.response(&quick));
    stdio.send(&cancelled(&doomed));
    // A cancellation that names nothing running changes nothing.
    stdio.send(&cancelled(&json!("no-such-request")));
    assert_serving(&stdio);
    // End of input waits for what runs: the cancelled sleep no longer does.
    assert_unanswered(&stdio.finish(), &[doomed]);
}

#[test]
fn a_cancellation_right_behind_its_request_is_honoured() {
    let host = Host::start(&["probe", "hash"]);
    let stdio = host.stdio();
    let doomed = json!(41);
    // One write: the cancellation is read before the request could run.
    stdio.write(&format!(
        "{}\n{}\n",
        request(doomed.clone(), "tools/call", long_sleep()),
        cancelled(&doomed)
    ));
    assert_serving(&stdio);
    assert_unanswered(&stdio.finish(), &[doomed]);
}

#[test]
fn a_cancelled_stdio_session_request_gets_no_reply_and_the_session_goes_on() {
    let host = Host::start(&["everything"]);
    let stdio = host.stdio();
    let init = stdio.send_request("initialize", initialize_params("2025-11-25", legacy_caps()));
    assert!(stdio.response(&init).get("result").is_some());
    let elicitation = json!({"name": "test_elicitation", "arguments": {"message": "Cancel me"}});
    // Cancelled while it waits for the client's answer.
    let waiting = stdio.send_request("tools/call", elicitation.clone());
    let asked = stdio.next_message("elicitation/create");
    assert_eq!(asked["method"], "elicitation/create", "{asked}");
    stdio.send(&cancelled(&waiting));
    // Cancelled right behind its request.
    let behind = stdio.next_id();
    stdio.write(&format!(
        "{}\n{}\n",
        request(behind.clone(), "tools/call", elicitation),
        cancelled(&behind)
    ));
    let ping = stdio.send_request("ping", json!({}));
    assert_eq!(stdio.response(&ping)["result"], json!({}));
    // The answer to the cancelled call's question awaits nothing now.
    stdio.send(&json!({"jsonrpc": "2.0", "id": asked["id"],
        "result": elicit("accept", Some(json!({"response": "late"})))}));
    let ping = stdio.send_request("ping", json!({}));
    assert_eq!(stdio.response(&ping)["result"], json!({}));
    assert_unanswered(&stdio.finish(), &[waiting, behind]);
}

#[test]
fn a_cancelled_session_call_over_http_ends_and_the_session_goes_on() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let session = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&session, "Cancel me");
    let reply = session.notify(
        "notifications/cancelled",
        json!({"requestId": call, "reason": "changed my mind"}),
    );
    assert_eq!(reply.status, 202, "{}", reply.text());
    // The stream ends without a response.
    assert_stream_ends(&mut stream, HANG_GUARD);
    let late = session.respond(&asked, elicit("accept", Some(json!({"response": "x"}))));
    assert_eq!(late.status, 400, "nothing awaits it now: {}", late.text());
    assert_ping(&session);
    let (call, mut stream, asked) = start_elicitation(&session, "Again");
    accept_elicitation(&session, &asked, "again");
    assert_elicitation_result(&mut stream, &call, "again");
}

#[test]
fn deleting_a_session_mid_call_ends_only_that_sessions_call() {
    let host = Host::start(&["everything"]);
    let http = host.http();
    let bystander = http.open_session(legacy_caps());
    let (other_call, mut other_stream, other_asked) = start_elicitation(&bystander, "Still there?");
    let doomed = http.open_session(legacy_caps());
    let (call, mut stream, asked) = start_elicitation(&doomed, "Going?");
    assert_eq!(doomed.delete().status, 200);
    loop {
        match stream.next_event(HANG_GUARD) {
            Next::Ended => break,
            Next::Event(event) if event["id"] == call && event.get("method").is_none() => {
                assert!(event.get("error").is_some(), "{event}");
            }
            other => panic!("the call should end with its session, got {other:?}"),
        }
    }
    let late = doomed.respond(&asked, elicit("accept", Some(json!({"response": "late"}))));
    assert_session_not_found(&late, "an answer after DELETE");
    assert_ping(&bystander);
    accept_elicitation(&bystander, &other_asked, "yes");
    assert_elicitation_result(&mut other_stream, &other_call, "yes");
}
