//! The cost of one tool call in-process: a new `Store`, a fresh instance from
//! the component's pre-instantiated handle, `call-tool`, and dropping it all,
//! exactly as [`ToolEntry::call`] does for every request.
//!
//! Needs the guests built first:
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p hash -p probe
//! cargo bench -p airlock --bench fresh_instance
//! ```
//!
//! Before the criterion runs, it prints percentiles of single calls (which
//! criterion's per-sample means hide) and the throughput of one and of two
//! threads calling at once.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::registry::{Registry, ToolEntry};
use airlock::runtime::{Runtime, RuntimeLimits, wit};
use criterion::{Criterion, criterion_group, criterion_main};

/// (tool, arguments, component) pairs to measure.
const CASES: &[(&str, &str, &str)] = &[
    ("sha256", r#"{"text":"hello, world"}"#, "hash"),
    ("count", "{}", "probe"),
];

fn guest_dir() -> PathBuf {
    match std::env::var_os("AIRLOCK_GUEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/wasm32-wasip2/release"),
    }
}

fn round() -> wit::Round {
    wit::Round::first(wit::ClientCapabilities::NONE)
}

/// Loads hash and probe from a temporary tools directory.
fn load(rt: &tokio::runtime::Runtime, runtime: &Arc<Runtime>) -> Option<Registry> {
    let guests = guest_dir();
    let tools = std::env::temp_dir().join(format!("airlock-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tools);
    std::fs::create_dir_all(&tools).ok()?;
    for name in ["hash", "probe"] {
        let from = guests.join(format!("{name}.wasm"));
        if !from.is_file() {
            eprintln!(
                "SKIPPED: {} is missing; build the guests first with \
                 `cargo build --release --target wasm32-wasip2 -p hash -p probe`",
                from.display()
            );
            return None;
        }
        std::fs::copy(&from, tools.join(format!("{name}.wasm"))).ok()?;
    }
    let registry = rt.block_on(Registry::load(runtime, &tools, None)).ok();
    let _ = std::fs::remove_dir_all(&tools);
    registry
}

fn call(rt: &tokio::runtime::Runtime, runtime: &Runtime, entry: &ToolEntry, args: &str) {
    let outcome = rt.block_on(entry.call(runtime, args, &round(), None));
    assert!(outcome.is_ok(), "{:?}", outcome.err());
}

/// Times `n` single calls and prints their percentiles.
fn percentiles(rt: &tokio::runtime::Runtime, runtime: &Runtime, entry: &ToolEntry, args: &str) {
    const N: usize = 20_000;
    for _ in 0..2_000 {
        call(rt, runtime, entry, args);
    }
    let mut times = Vec::with_capacity(N);
    for _ in 0..N {
        let started = Instant::now();
        call(rt, runtime, entry, args);
        times.push(started.elapsed());
    }
    times.sort();
    let at = |p: f64| times[((N as f64 * p) as usize).min(N - 1)];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{:<8} single calls (n={N}): median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
        entry.item().name,
        micros(at(0.5)),
        micros(at(0.9)),
        micros(at(0.99)),
        micros(at(0.999)),
        micros(times[N - 1]),
    );
}

/// Calls per second with `threads` threads, each with its own
/// current-thread tokio runtime, calling for `window`.
fn throughput(
    runtime: &Arc<Runtime>,
    registry: &Arc<Registry>,
    tool: &str,
    args: &str,
    threads: usize,
) -> f64 {
    let window = Duration::from_secs(1);
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (runtime, registry) = (runtime.clone(), registry.clone());
            let (tool, args) = (tool.to_owned(), args.to_owned());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let entry = registry.find(&tool).unwrap();
                let started = Instant::now();
                let mut calls = 0u64;
                while started.elapsed() < window {
                    call(&rt, &runtime, entry, &args);
                    calls += 1;
                }
                calls as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

fn fresh_instance(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runtime = Runtime::new(RuntimeLimits::default()).unwrap();
    let Some(registry) = load(&rt, &runtime) else {
        return;
    };
    let registry = Arc::new(registry);
    for &(tool, args, _) in CASES {
        let entry = registry.find(tool).unwrap();
        percentiles(&rt, &runtime, entry, args);
        let one = throughput(&runtime, &registry, tool, args, 1);
        let two = throughput(&runtime, &registry, tool, args, 2);
        println!(
            "{tool:<8} throughput: {one:.0} calls/s on 1 thread, {two:.0} calls/s on 2 threads"
        );
    }
    let mut group = c.benchmark_group("fresh_instance");
    for &(tool, args, component) in CASES {
        let entry = registry.find(tool).unwrap();
        group.bench_function(format!("{component}/{tool}"), |b| {
            b.iter(|| call(&rt, &runtime, entry, args))
        });
    }
    group.finish();
}

criterion_group!(benches, fresh_instance);
criterion_main!(benches);
