//! Whole requests in-process, without HTTP: JSON-RPC decoding, envelope
//! checks, opening and sealing `requestState`, a fresh instance per round,
//! and encoding the reply, exactly as a transport drives [`Server::handle`].
//!
//! - `sha256`: one plain `tools/call`;
//! - `work_items_flow`: the full `update_work_item` flow of the sample tool:
//!   three rounds (Resolution asked, "Duplicate Of" asked, complete), each a
//!   new request carrying the previous round's sealed state;
//! - `bridged_work_items_flow`: the same flow for a 2025-era session: one
//!   `tools/call`, the two questions sent to the client as
//!   `elicitation/create` requests and answered at once by an in-process
//!   client, the three rounds run by the bridge.
//!
//! Needs the guests built first:
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p hash -p work-items
//! cargo bench -p airlock --bench protocol_flows
//! ```

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use airlock::legacy::{BridgeSettings, Legacy, Session};
use airlock::protocol::jsonrpc::{self, Incoming, Response};
use airlock::protocol::{ProtocolSettings, RequestContext, Server};
use airlock::registry::Registry;
use airlock::runtime::{Runtime, RuntimeLimits};
use airlock::sealing::{KeyRing, StateLimits, StateSealer};
use airlock::telemetry::Via;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn guest_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("AIRLOCK_GUEST_DIR") {
        return PathBuf::from(dir);
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("wasm32-wasip2/release")
}

fn server(rt: &tokio::runtime::Runtime) -> Option<Arc<Server>> {
    let tools = std::env::temp_dir().join(format!("airlock-bench-flows-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tools);
    std::fs::create_dir_all(&tools).ok()?;
    for name in ["hash", "work_items"] {
        let from = guest_dir().join(format!("{name}.wasm"));
        if std::fs::copy(&from, tools.join(format!("{name}.wasm"))).is_err() {
            eprintln!(
                "missing {}: build the guests first (see the bench's doc comment)",
                from.display()
            );
            return None;
        }
    }
    let runtime = Runtime::new(RuntimeLimits::default()).expect("runtime");
    let registry = rt
        .block_on(Registry::load(&runtime, &tools, None))
        .expect("tools load");
    let sealer = StateSealer::new(
        KeyRing::ephemeral(),
        Duration::from_secs(600),
        StateLimits::default(),
    );
    Some(Arc::new(
        Server::new(
            runtime,
            Arc::new(registry),
            sealer,
            ProtocolSettings::default(),
        )
        .expect("server"),
    ))
}

fn call(name: &str, arguments: Value, extra: Value) -> Vec<u8> {
    let mut params = json!({
        "name": name,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        },
    });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    serde_json::to_vec(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
    )
    .unwrap()
}

async fn send(server: &Server, body: &[u8]) -> Value {
    let Ok(Incoming::Request(request)) = jsonrpc::decode(body) else {
        panic!("bad request")
    };
    let caller = airlock::access::Caller::new("bench", airlock::access::Source::Token);
    let context = RequestContext {
        principal: "bench",
        caller: &caller,
        headers: None,
    };
    let reply = server.handle(&request, context, None).await;
    let reply: Value = serde_json::from_slice(&reply.body).unwrap();
    reply["result"].clone()
}

async fn work_items_flow(server: &Server) {
    let arguments = json!({"workItemId": 42, "fields": {"State": "Resolved"}});
    let first = send(
        server,
        &call("update_work_item", arguments.clone(), json!({})),
    )
    .await;
    let second = send(server, &call("update_work_item", arguments.clone(), json!({
        "inputResponses": {"resolution": {"action": "accept", "content": {"resolution": "Duplicate"}}},
        "requestState": first["requestState"],
    })))
    .await;
    let done = send(server, &call("update_work_item", arguments, json!({
        "inputResponses": {"duplicate_of": {"action": "accept", "content": {"duplicateOf": 17}}},
        "requestState": second["requestState"],
    })))
    .await;
    assert_eq!(
        done["resultType"], "complete",
        "flow did not complete: {done}"
    );
}

/// Opens a 2025-11-25 session that declared form elicitation.
fn session(legacy: &Legacy) -> Session {
    let body = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}"#;
    let Ok(Incoming::Request(request)) = jsonrpc::decode(body) else {
        panic!("bad initialize")
    };
    let Ok((session, _)) = legacy.initialize(&request, "bench") else {
        panic!("initialize refused")
    };
    session
}

async fn bridged_work_items_flow(legacy: &Legacy, session: &Session) {
    let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"update_work_item","arguments":{"workItemId":42,"fields":{"State":"Resolved"}}}}"#;
    let Ok(Incoming::Request(request)) = jsonrpc::decode(body) else {
        panic!("bad request")
    };
    let (out, mut asked) = tokio::sync::mpsc::channel::<Vec<u8>>(8);
    let client = async {
        while let Some(message) = asked.recv().await {
            let message: Value = serde_json::from_slice(&message).unwrap();
            let content = if message["params"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("resolution"))
            {
                json!({"resolution": "Duplicate"})
            } else {
                json!({"duplicateOf": 17})
            };
            session.answer(Response {
                id: message["id"].clone(),
                outcome: Ok(json!({"action": "accept", "content": content})),
            });
        }
    };
    let caller = airlock::access::Caller::stdio();
    let call = async {
        let reply = legacy
            .handle(session, &request, &caller, Some(&out), Via::Stdio)
            .await;
        drop(out);
        reply
    };
    let (reply, ()) = tokio::join!(call, client);
    let reply: Value = serde_json::from_slice(&reply.body).unwrap();
    assert_eq!(
        reply["result"]["structuredContent"]["fields"]["Duplicate Of"], 17,
        "bridged flow did not complete: {reply}"
    );
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let Some(server) = server(&rt) else { return };
    let sha256 = call("sha256", json!({"text": "hello"}), json!({}));
    rt.block_on(async {
        assert_eq!(
            send(&server, &sha256).await["content"][0]["text"],
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        work_items_flow(&server).await;
    });
    let legacy = Legacy::new(server.clone(), BridgeSettings::default());
    let session = session(&legacy);
    rt.block_on(bridged_work_items_flow(&legacy, &session));
    c.bench_function("sha256 tools/call in-process", |b| {
        b.iter(|| rt.block_on(send(&server, &sha256)))
    });
    c.bench_function("work_items 3-round flow in-process", |b| {
        b.iter(|| rt.block_on(work_items_flow(&server)))
    });
    c.bench_function("work_items 3-round flow bridged (2025 session)", |b| {
        b.iter(|| rt.block_on(bridged_work_items_flow(&legacy, &session)))
    });
}

criterion_group!(flows, benches);
criterion_main!(flows);
