//! The runtime and registry against real guest components.
//!
//! Needs the guests built first (the CI script does it):
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p hash -p probe -p wrong-world
//! ```
//!
//! A test whose guests are missing fails, saying how to build them
//! (`airlock_e2e::paths::component`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::registry::Registry;
use airlock::registry::cache::{CompileCache, Origin};
use airlock::runtime::{CallError, GuestEvent, Runtime, RuntimeLimits, wit};

/// The paths of the named guests (panics, saying how to build them, if one
/// is missing). Also sends the host's log lines to the test output (shown
/// for failing tests, or with `--nocapture`).
fn guests(names: &[&str]) -> Vec<PathBuf> {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()),
        )
        .try_init();
    names
        .iter()
        .map(|name| airlock_e2e::paths::component(name))
        .collect()
}

/// A fresh temporary directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("airlock-rt-{test}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A tools directory holding copies of `files` under the given names.
fn tools_dir(test: &str, files: &[(&Path, &str)]) -> PathBuf {
    let dir = temp_dir(test);
    for (from, name) in files {
        std::fs::copy(from, dir.join(name)).unwrap();
    }
    dir
}

/// Small pools: tests run in parallel, each with its own engine.
fn runtime(limits: RuntimeLimits) -> Arc<Runtime> {
    Runtime::new(RuntimeLimits {
        max_concurrent_calls: 4,
        ..limits
    })
    .unwrap()
}

/// The probe component alone, loaded.
async fn probe(test: &str, limits: RuntimeLimits) -> (Arc<Runtime>, Registry) {
    let paths = guests(&["probe"]);
    let dir = tools_dir(test, &[(&paths[0], "probe.wasm")]);
    let runtime = runtime(limits);
    let registry = Registry::load(&runtime, &dir, None).await.unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    (runtime, registry)
}

fn round() -> wit::Round {
    wit::Round::first(wit::ClientCapabilities::NONE)
}

/// The text of a complete, single-text-block outcome.
fn text(outcome: &wit::CallOutcome) -> &str {
    match outcome {
        wit::CallOutcome::Complete(result) => match result.content.as_slice() {
            [wit::ContentBlock::Text(t)] => &t.text,
            other => panic!("expected one text block, got {} blocks", other.len()),
        },
        other => panic!("expected a complete outcome, got {other:?}"),
    }
}

async fn call(
    runtime: &Runtime,
    registry: &Registry,
    tool: &str,
    args: &str,
) -> Result<wit::CallOutcome, CallError> {
    let entry = registry
        .find(tool)
        .unwrap_or_else(|| panic!("no tool {tool}"));
    entry.call(runtime, args, &round(), None).await
}

#[tokio::test]
async fn every_call_gets_a_fresh_instance() {
    let (runtime, registry) = probe("fresh", RuntimeLimits::default()).await;
    for _ in 0..5 {
        let outcome = call(&runtime, &registry, "count", "{}").await.unwrap();
        assert_eq!(text(&outcome), "1");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spin_is_stopped_at_its_deadline_while_other_calls_answer() {
    let limits = RuntimeLimits {
        call_timeout: Duration::from_millis(500),
        ..RuntimeLimits::default()
    };
    let (runtime, registry) = probe("spin", limits).await;
    let registry = Arc::new(registry);
    let started = Instant::now();
    // Two spinning guests: as many as worker threads.
    let spinners: Vec<_> = (0..2)
        .map(|_| {
            let (runtime, registry) = (runtime.clone(), registry.clone());
            tokio::spawn(async move { call(&runtime, &registry, "spin", "{}").await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let quick = Instant::now();
    let outcome = call(&runtime, &registry, "count", "{}").await.unwrap();
    assert_eq!(text(&outcome), "1");
    assert!(
        // Well before the spinners' deadline: they did not block it.
        quick.elapsed() < Duration::from_millis(400),
        "count took {:?} next to spinning guests",
        quick.elapsed()
    );
    for spinner in spinners {
        let err = spinner.await.unwrap().unwrap_err();
        assert!(
            matches!(err, CallError::Timeout { limit } if limit == Duration::from_millis(500)),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "the tool did not finish within its 500 ms time limit"
        );
    }
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(500) && elapsed < Duration::from_millis(3000),
        "spinners stopped after {elapsed:?}"
    );
}

#[tokio::test]
async fn a_wasi_sleep_past_the_deadline_times_out() {
    let limits = RuntimeLimits {
        call_timeout: Duration::from_millis(300),
        ..RuntimeLimits::default()
    };
    let (runtime, registry) = probe("sleep", limits).await;
    let outcome = call(&runtime, &registry, "sleep", r#"{"ms": 10}"#)
        .await
        .unwrap();
    assert_eq!(text(&outcome), "slept 10");
    let started = Instant::now();
    let err = call(&runtime, &registry, "sleep", r#"{"ms": 5000}"#)
        .await
        .unwrap_err();
    assert!(matches!(err, CallError::Timeout { .. }), "{err:?}");
    assert!(started.elapsed() < Duration::from_millis(2000));
}

#[tokio::test]
async fn hog_is_stopped_by_the_memory_cap() {
    let limits = RuntimeLimits {
        max_memory_bytes: 16 << 20,
        ..RuntimeLimits::default()
    };
    let (runtime, registry) = probe("hog", limits).await;
    let err = call(&runtime, &registry, "hog", "{}").await.unwrap_err();
    assert!(
        matches!(err, CallError::OutOfMemory { limit } if limit == 16 << 20),
        "{err:?}"
    );
    assert_eq!(err.to_string(), "the tool exceeded its 16 MiB memory limit");
    // The host carries on.
    let outcome = call(&runtime, &registry, "count", "{}").await.unwrap();
    assert_eq!(text(&outcome), "1");
}

#[tokio::test]
async fn a_panic_is_a_trap() {
    let (runtime, registry) = probe("trap", RuntimeLimits::default()).await;
    let err = call(&runtime, &registry, "trap", "{}").await.unwrap_err();
    let CallError::Trapped { detail } = &err else {
        panic!("expected a trap, got {err:?}");
    };
    assert!(!detail.is_empty());
    assert_eq!(err.to_string(), "the tool crashed (wasm trap)");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_and_logs_arrive_in_order() {
    let (runtime, registry) = probe("progress", RuntimeLimits::default()).await;
    // A small channel: the guest must wait for the reader, not lose events.
    let (sink, mut events) = tokio::sync::mpsc::channel(2);
    let reader = tokio::spawn(async move {
        let mut all = Vec::new();
        while let Some(event) = events.recv().await {
            all.push(event);
        }
        all
    });
    let entry = registry.find("progress").unwrap();
    let outcome = entry
        .call(&runtime, r#"{"steps": 20}"#, &round(), Some(sink))
        .await
        .unwrap();
    assert_eq!(text(&outcome), "done");
    let events = reader.await.unwrap();
    assert_eq!(events.len(), 40, "{events:?}");
    for (i, pair) in events.chunks(2).enumerate() {
        let step = i + 1;
        assert!(
            matches!(&pair[0], GuestEvent::Log { message, .. } if *message == format!("step {step}")),
            "{pair:?}"
        );
        assert_eq!(
            pair[1],
            GuestEvent::Progress {
                progress: step as f64,
                total: Some(20.0),
                message: None
            }
        );
    }
}

#[tokio::test]
async fn events_beyond_the_per_call_limit_are_dropped() {
    let limits = RuntimeLimits {
        max_events_per_call: 5,
        ..RuntimeLimits::default()
    };
    let (runtime, registry) = probe("event-limit", limits).await;
    let (sink, mut events) = tokio::sync::mpsc::channel(100);
    let entry = registry.find("progress").unwrap();
    entry
        .call(&runtime, r#"{"steps": 10}"#, &round(), Some(sink))
        .await
        .unwrap();
    let mut n = 0;
    while events.recv().await.is_some() {
        n += 1;
    }
    assert_eq!(n, 5);
}

#[tokio::test]
async fn the_sandbox_grants_nothing() {
    let (runtime, registry) = probe("sandbox", RuntimeLimits::default()).await;
    let outcome = call(&runtime, &registry, "env", "{}").await.unwrap();
    let wit::CallOutcome::Complete(result) = &outcome else {
        panic!("expected a complete outcome");
    };
    let seen: serde_json::Value = match &result.structured_content {
        Some(json) => serde_json::from_str(json).unwrap(),
        None => serde_json::from_str(text(&outcome)).unwrap(),
    };
    assert_eq!(seen["vars"], serde_json::json!({}), "{seen}");
    assert_eq!(seen["args"], serde_json::json!([]), "{seen}");
    // No preopened directories: no file is readable.
    let outcome = call(
        &runtime,
        &registry,
        "read_file",
        r#"{"path": "/etc/hostname"}"#,
    )
    .await
    .unwrap();
    let wit::CallOutcome::Complete(result) = outcome else {
        panic!("expected a complete outcome");
    };
    assert!(result.is_error);
}

#[tokio::test]
async fn loads_in_file_name_order_and_skips_the_wrong_world() {
    let paths = guests(&["hash", "probe", "wrong-world"]);
    let dir = tools_dir(
        "load",
        &[
            (&paths[1], "a-probe.wasm"),
            (&paths[2], "b-wrong-world.wasm"),
            (&paths[0], "c-hash.wasm"),
        ],
    );
    std::fs::write(dir.join("d-junk.wasm"), "not wasm").unwrap();
    let runtime = runtime(RuntimeLimits::default());
    let registry = Registry::load(&runtime, &dir, None).await.unwrap();
    let names: Vec<&str> = registry
        .tools()
        .iter()
        .map(|t| t.item().listed.name.as_str())
        .collect();
    assert_eq!(names.first(), Some(&"count"));
    assert_eq!(names.last(), Some(&"sha256"));
    assert!(
        registry
            .tools()
            .iter()
            .all(|t| !t.source().ends_with("b-wrong-world.wasm"))
    );
    let sha = registry.find("sha256").unwrap();
    assert!(sha.source().ends_with("c-hash.wasm"));
    let outcome = sha
        .call(&runtime, r#"{"text":"abc"}"#, &round(), None)
        .await
        .unwrap();
    assert_eq!(
        text(&outcome),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn duplicate_tool_names_refuse_to_start() {
    let paths = guests(&["hash"]);
    let dir = tools_dir("dup", &[(&paths[0], "one.wasm"), (&paths[0], "two.wasm")]);
    let runtime = runtime(RuntimeLimits::default());
    let err = Registry::load(&runtime, &dir, None).await.unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("`sha256`"), "{msg}");
    assert!(
        msg.contains("one.wasm") && msg.contains("two.wasm"),
        "{msg}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[tokio::test]
async fn second_load_comes_from_the_cache() {
    let paths = guests(&["hash"]);
    let wasm = std::fs::read(&paths[0]).unwrap();
    let cache_dir = temp_dir("cache-artifacts");
    let runtime = runtime(RuntimeLimits::default());
    let engine = runtime.engine();
    let cache = CompileCache::new(engine, &cache_dir);

    let (_, origin) = cache.load_or_compile(engine, &wasm, &paths[0]).unwrap();
    assert!(matches!(origin, Origin::Compiled { .. }), "{origin:?}");
    let artifact = cache.path(&wasm);
    assert!(artifact.is_file(), "{} missing", artifact.display());
    let (_, origin) = cache.load_or_compile(engine, &wasm, &paths[0]).unwrap();
    assert_eq!(origin, Origin::Cache);

    // A corrupt artifact is reported and replaced, never trusted.
    std::fs::write(&artifact, b"garbage").unwrap();
    let (_, origin) = cache.load_or_compile(engine, &wasm, &paths[0]).unwrap();
    assert!(matches!(origin, Origin::Compiled { .. }), "{origin:?}");
    let (_, origin) = cache.load_or_compile(engine, &wasm, &paths[0]).unwrap();
    assert_eq!(origin, Origin::Cache);

    // Through the registry: the cached artifact is used as is and works.
    let dir = tools_dir("cache", &[(&paths[0], "hash.wasm")]);
    let modified = std::fs::metadata(&artifact).unwrap().modified().unwrap();
    let registry = Registry::load(&runtime, &dir, Some(&cache_dir))
        .await
        .unwrap();
    assert_eq!(
        std::fs::metadata(&artifact).unwrap().modified().unwrap(),
        modified
    );
    let outcome = registry
        .find("sha256")
        .unwrap()
        .call(&runtime, r#"{"text":""}"#, &round(), None)
        .await
        .unwrap();
    assert_eq!(
        text(&outcome),
        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    );
    // Only the artifact is left in the cache directory (no temporary files).
    let entries: Vec<_> = std::fs::read_dir(&cache_dir).unwrap().collect();
    assert_eq!(entries.len(), 1);

    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&cache_dir).unwrap();
}

#[tokio::test]
async fn a_relist_is_swapped_in_only_while_its_version_of_the_component_is_loaded() {
    let paths = guests(&["hash"]);
    let dir = tools_dir("relist", &[(&paths[0], "hash.wasm")]);
    let file = dir.join("hash.wasm");
    let runtime = runtime(RuntimeLimits::default());
    let loaded = Registry::load(&runtime, &dir, None).await.unwrap();
    let relisted = loaded.relist(&runtime, &file).await.unwrap();

    // Into the registry it was listed from (as often as asked), and into a
    // reload that kept the file.
    let swapped = loaded
        .with_relisted(&relisted)
        .unwrap()
        .expect("the version it was listed from");
    assert!(swapped.find("sha256").is_some());
    assert!(swapped.with_relisted(&relisted).unwrap().is_some());
    let kept = loaded.reload(&runtime, &dir, None).await.unwrap();
    assert!(kept.with_relisted(&relisted).unwrap().is_some());

    // Not into a reload that replaced the file (a new file with the same
    // bytes) or removed it: what that reload listed is newer.
    let partial = dir.join(".hash.wasm.partial");
    std::fs::copy(&paths[0], &partial).unwrap();
    std::fs::rename(&partial, &file).unwrap();
    let replaced = loaded.reload(&runtime, &dir, None).await.unwrap();
    assert!(replaced.find("sha256").is_some());
    assert!(replaced.with_relisted(&relisted).unwrap().is_none());
    std::fs::remove_file(&file).unwrap();
    let removed = replaced.reload(&runtime, &dir, None).await.unwrap();
    assert!(removed.with_relisted(&relisted).unwrap().is_none());
    let gone = removed.relist(&runtime, &file).await.unwrap_err();
    assert!(gone.to_string().contains("no longer loaded"), "{gone}");
    std::fs::remove_dir_all(&dir).unwrap();
}
