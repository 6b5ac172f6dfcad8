//! Tasks (MCP's tasks extension) in-process, over each task store: in
//! memory (the baseline), in a file ([`EmbeddedStore`], in a temporary
//! directory) and in Redis ([`RedisStore`], a `redis-server` this bench
//! starts on a free loopback port without persistence, and stops at the
//! end; skipped with a message when `redis-server` is not installed).
//!
//! - `tasks store`: the store alone, no protocol: `create` (into a store
//!   holding fewer than [`CHUNK`] tasks), `get`, `replace` and `claim` of
//!   one task.
//! - `tasks protocol`: `tools/call slow_compute` from a client that declared
//!   the tasks extension, answered with its `CreateTaskResult` once the task
//!   is stored, then the first `tasks/get` of it (`working`); and
//!   `tasks/get` alone. The runner does not run: the tasks stay `working`.
//! - `tasks completed`: with the runner running, [`BATCH`] calls of
//!   `build_report {"items": ["a"]}` made at once, each becoming a task that
//!   completes in its first task round; timed until every task is
//!   `completed`. The time reported is per task (batch time / [`BATCH`]),
//!   so criterion's throughput is tasks per second. Run with the default
//!   settings (16 rounds at once) and with room for the whole batch.
//!
//! Every task is created by one principal, whose limit is set out of the
//! way; each store is emptied between samples, outside the timed part.
//!
//! Needs the guests built first:
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p everything -p report
//! cargo bench -p airlock --bench tasks
//! ```

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::protocol::jsonrpc::{self, Incoming};
use airlock::protocol::{ProtocolSettings, RequestContext, Server};
use airlock::registry::Registry;
use airlock::runtime::{Runtime, RuntimeLimits};
use airlock::sealing::{KeyRing, StateLimits, StateSealer};
use airlock::tasks::{
    EmbeddedStore, MemoryStore, RedisStore, StoreLimits, TaskEvent, TaskRecord, TaskSettings,
    TaskStatus, TaskStore, Tasks, now_ms,
};
use airlock_e2e::RedisServer;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};
use tokio::runtime::Runtime as Tokio;

/// The principal of every request.
const PRINCIPAL: &str = "bench";
/// A limit of tasks per principal that the bench never reaches.
const NO_LIMIT: usize = 1_000_000;
/// At most this many tasks are created into a store before it is emptied
/// (outside the timed part), so that no store grows with the sample size.
const CHUNK: u64 = 100;
/// How many tasks are made at once in `tasks completed`.
const BATCH: u64 = 200;

/// What keeps a store's backing alive while it is measured.
enum Backing {
    Memory,
    File { _dir: tempfile::TempDir },
    Redis(RedisServer),
}

/// A store under measurement.
struct Backend {
    name: &'static str,
    store: Arc<dyn TaskStore>,
    backing: Backing,
}

impl Backend {
    fn memory() -> Backend {
        Backend {
            name: "memory",
            store: Arc::new(MemoryStore::default()),
            backing: Backing::Memory,
        }
    }

    fn embedded() -> Backend {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = EmbeddedStore::open(&dir.path().join("tasks.redb")).expect("the task file");
        Backend {
            name: "embedded",
            store: Arc::new(store),
            backing: Backing::File { _dir: dir },
        }
    }

    fn redis(rt: &Tokio) -> Option<Backend> {
        // Without redis-server, the other stores are still measured.
        let installed = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|status| status.success());
        if !installed {
            eprintln!(
                "redis-server is not installed: skipping the Redis store \
                 (install it, e.g. apt-get install -y redis-server)"
            );
            return None;
        }
        let server = RedisServer::start();
        let store = rt
            .block_on(RedisStore::connect(&server.url()))
            .expect("connecting to the bench's redis-server");
        Some(Backend {
            name: "redis",
            store: Arc::new(store),
            backing: Backing::Redis(server),
        })
    }

    /// Forgets every task (not timed).
    async fn clear(&self) {
        match &self.backing {
            Backing::Redis(server) => {
                let client = redis::Client::open(server.url()).unwrap();
                let mut connection = client.get_multiplexed_async_connection().await.unwrap();
                redis::cmd("FLUSHDB")
                    .query_async::<()>(&mut connection)
                    .await
                    .unwrap();
            }
            // Every task expires before the end of time.
            Backing::Memory | Backing::File { .. } => self.store.sweep(u64::MAX).await.unwrap(),
        }
    }
}

/// A `working` task due for its first round, as [`Tasks`] creates them: a
/// sealed payload of a typical size, expiring in 30 days.
fn record(id: String) -> TaskRecord {
    let now = now_ms();
    TaskRecord {
        id,
        owner: PRINCIPAL.to_owned(),
        tool: "slow_compute".to_owned(),
        status: TaskStatus::Working,
        status_message: None,
        created_at_ms: now,
        updated_at_ms: now,
        expires_at_ms: now + 30 * 24 * 3_600_000,
        poll_interval_ms: Some(500),
        round: 1,
        attempts: 0,
        sealed: vec![7; 256],
        input_requests: None,
        outcome: None,
        runnable: true,
        due_since_ms: now,
        lease: None,
        version: 0,
    }
}

/// The store alone: `create`, `get`, `replace`, `claim`.
fn store_benches(c: &mut Criterion, rt: &Tokio, backend: &Backend) {
    let store = &backend.store;
    let mut group = c.benchmark_group("tasks store");
    group.bench_function(BenchmarkId::new("create", backend.name), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut timed = Duration::ZERO;
                let mut made = 0;
                while made < iters {
                    backend.clear().await;
                    let records: Vec<TaskRecord> = (0..CHUNK.min(iters - made))
                        .map(|i| record(format!("create-{i}")))
                        .collect();
                    made += records.len() as u64;
                    let start = Instant::now();
                    for record in records {
                        store.create(record, StoreLimits::NONE).await.unwrap();
                    }
                    timed += start.elapsed();
                }
                timed
            })
        })
    });
    rt.block_on(async {
        backend.clear().await;
        store
            .create(record("one".into()), StoreLimits::NONE)
            .await
            .unwrap();
    });
    group.bench_function(BenchmarkId::new("get", backend.name), |b| {
        b.iter(|| rt.block_on(async { store.get("one").await.unwrap().unwrap() }))
    });
    group.bench_function(BenchmarkId::new("replace", backend.name), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut record = store.get("one").await.unwrap().unwrap();
                let start = Instant::now();
                for _ in 0..iters {
                    record.updated_at_ms += 1;
                    assert!(
                        store.replace(&record, StoreLimits::NONE).await.unwrap(),
                        "a fresh version"
                    );
                    record.version += 1;
                }
                start.elapsed()
            })
        })
    });
    // One task, claimed again and again on a clock of its own that moves a
    // millisecond per claim, so that each claim finds the last one's lease
    // run out.
    let mut clock = now_ms();
    group.bench_function(BenchmarkId::new("claim", backend.name), |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let claimed = store.claim("host", clock, clock + 1).await.unwrap();
                    assert!(claimed.is_some(), "the task's round is due");
                    clock += 1;
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

/// A server over the sample tools, keeping its tasks in `store`.
fn server(
    runtime: &Arc<Runtime>,
    registry: &Arc<Registry>,
    store: Arc<dyn TaskStore>,
    max_running: usize,
) -> (Arc<Server>, Arc<Tasks>) {
    let settings = TaskSettings {
        max_per_principal: NO_LIMIT,
        max_running,
        ..TaskSettings::default()
    };
    let tasks = Arc::new(Tasks::new(store, settings));
    let sealer = StateSealer::new(
        KeyRing::ephemeral(),
        Duration::from_secs(600),
        StateLimits::default(),
    );
    let server = Server::new(
        runtime.clone(),
        registry.clone(),
        sealer,
        ProtocolSettings::default(),
    )
    .expect("server")
    .with_tasks(tasks.clone());
    (Arc::new(server), tasks)
}

/// A request of a client that declared the tasks extension.
fn request(method: &str, mut params: Value) -> Vec<u8> {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}},
        },
    });
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        .unwrap()
}

/// The result of `body`, handled as a transport would.
async fn send(server: &Server, body: &[u8]) -> Value {
    let Ok(Incoming::Request(request)) = jsonrpc::decode(body) else {
        panic!("bad request")
    };
    let caller = airlock::access::Caller::new(PRINCIPAL, airlock::access::Source::Token);
    let context = RequestContext {
        principal: PRINCIPAL,
        caller: &caller,
        headers: None,
    };
    let reply = server.handle(&request, context, None).await;
    let mut reply: Value = serde_json::from_slice(&reply.body).unwrap();
    assert!(reply.get("error").is_none(), "{reply}");
    reply["result"].take()
}

/// Calls a tool that goes on as a task; its id.
async fn create(server: &Server, call: &[u8]) -> String {
    let created = send(server, call).await;
    assert_eq!(created["resultType"], "task", "{created}");
    created["taskId"].as_str().expect("a task id").to_owned()
}

/// `tasks/get`: the task's status.
async fn status(server: &Server, id: &str) -> String {
    let task = send(server, &request("tasks/get", json!({"taskId": id}))).await;
    task["status"].as_str().expect("a status").to_owned()
}

/// `tools/call` until the `CreateTaskResult`, and the first `tasks/get`.
fn protocol_benches(
    c: &mut Criterion,
    rt: &Tokio,
    backend: &Backend,
    runtime: &Arc<Runtime>,
    registry: &Arc<Registry>,
) {
    let (server, _tasks) = server(runtime, registry, backend.store.clone(), 16);
    let call = request(
        "tools/call",
        json!({"name": "slow_compute", "arguments": {"seconds": 1, "label": "x"}}),
    );
    let mut group = c.benchmark_group("tasks protocol");
    group.bench_function(
        BenchmarkId::new("tools/call → task + first tasks/get", backend.name),
        |b| {
            b.iter_custom(|iters| {
                rt.block_on(async {
                    let mut timed = Duration::ZERO;
                    let mut made = 0;
                    while made < iters {
                        backend.clear().await;
                        let chunk = CHUNK.min(iters - made);
                        made += chunk;
                        let start = Instant::now();
                        for _ in 0..chunk {
                            let id = create(&server, &call).await;
                            assert_eq!(status(&server, &id).await, "working");
                        }
                        timed += start.elapsed();
                    }
                    timed
                })
            })
        },
    );
    let id = rt.block_on(async {
        backend.clear().await;
        create(&server, &call).await
    });
    group.bench_function(BenchmarkId::new("tasks/get", backend.name), |b| {
        b.iter(|| rt.block_on(status(&server, &id)))
    });
    group.finish();
}

/// Makes [`BATCH`] tasks at once that complete in their first task round,
/// and waits until all have: how long that took.
async fn completed_batch(backend: &Backend, server: &Arc<Server>, call: &Arc<Vec<u8>>) -> Duration {
    backend.clear().await;
    let store = &backend.store;
    let mut events = store.events();
    let start = Instant::now();
    let calls: Vec<_> = (0..BATCH)
        .map(|_| {
            let (server, call) = (server.clone(), call.clone());
            tokio::spawn(async move { create(&server, &call).await })
        })
        .collect();
    let mut ids = HashSet::new();
    for call in calls {
        ids.insert(call.await.unwrap());
    }
    // Ended tasks are heard of through the store's events; a look at every
    // task left, now and then, catches any event missed.
    let mut look = tokio::time::interval(Duration::from_millis(250));
    loop {
        let changed: Vec<String> = tokio::select! {
            event = events.recv() => match event {
                Ok(TaskEvent::Changed(id)) if ids.contains(&id) => vec![id],
                Ok(_) => continue,
                Err(_) => ids.iter().cloned().collect(),
            },
            _ = look.tick() => ids.iter().cloned().collect(),
        };
        for id in changed {
            let task = store.get(&id).await.unwrap().expect("the task exists");
            if task.status.is_terminal() {
                assert_eq!(task.status, TaskStatus::Completed, "{task:?}");
                ids.remove(&id);
            }
        }
        if ids.is_empty() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "{} tasks still not completed after 300 s",
            ids.len()
        );
    }
}

/// Tasks completed per second, with the runner running.
fn throughput_benches(
    c: &mut Criterion,
    rt: &Tokio,
    backend: &Backend,
    runtime: &Arc<Runtime>,
    registry: &Arc<Registry>,
) {
    let call = Arc::new(request(
        "tools/call",
        json!({"name": "build_report", "arguments": {"items": ["a"]}}),
    ));
    let mut group = c.benchmark_group("tasks completed");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    for (setting, max_running) in [("16 at once (default)", 16), ("200 at once", 200)] {
        let (server, tasks) = server(runtime, registry, backend.store.clone(), max_running);
        // The tasks left `working` by the other groups are not this one's.
        rt.block_on(backend.clear());
        let runner = rt.spawn(tasks.run(server.clone(), server.shutting_down()));
        group.bench_function(BenchmarkId::new(setting, backend.name), |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                let mut made = 0;
                while made < iters {
                    timed += rt.block_on(completed_batch(backend, &server, &call));
                    made += BATCH;
                }
                // Per task: the batches' time, scaled to `iters` tasks.
                timed.mul_f64(iters as f64 / made as f64)
            })
        });
        server.shut_down();
        rt.block_on(runner).unwrap();
    }
    group.finish();
}

/// Copies the sample tools into a fresh directory and loads them.
fn registry(rt: &Tokio, runtime: &Arc<Runtime>, tools: &Path) -> Option<Arc<Registry>> {
    for name in ["everything", "report"] {
        let from = airlock_e2e::paths::component(name);
        if std::fs::copy(&from, tools.join(format!("{name}.wasm"))).is_err() {
            eprintln!(
                "missing {}: build the guests first (see the bench's doc comment)",
                from.display()
            );
            return None;
        }
    }
    let registry = rt
        .block_on(Registry::load(runtime, tools, None))
        .expect("tools load");
    Some(Arc::new(registry))
}

fn benches(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let tools = tempfile::tempdir().expect("a temporary directory");
    let runtime = Runtime::new(RuntimeLimits::default()).expect("runtime");
    let Some(registry) = registry(&rt, &runtime, tools.path()) else {
        return;
    };
    let mut backends = vec![Backend::memory(), Backend::embedded()];
    backends.extend(Backend::redis(&rt));
    for backend in &backends {
        store_benches(c, &rt, backend);
        protocol_benches(c, &rt, backend, &runtime, &registry);
        throughput_benches(c, &rt, backend, &runtime, &registry);
    }
}

criterion_group!(tasks, benches);
criterion_main!(tasks);
