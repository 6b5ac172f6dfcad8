//! The cost of one tool call in-process: a new `Store`, a fresh instance from
//! the component's pre-instantiated handle, `call-tool`, and dropping it all,
//! exactly as [`ToolEntry::call`] does for every request; for tools written
//! in Rust, Python and JavaScript alike.
//!
//! Needs the guests built first (a language whose component is missing is
//! skipped, with a note):
//!
//! ```text
//! cargo build --release --target wasm32-wasip2 -p hash -p probe
//! scripts/build-python-tools && scripts/build-javascript-tools
//! cargo bench -p airlock --bench fresh_instance
//! ```
//!
//! Before the criterion runs, it prints for each component its size and
//! initial memory, how long it takes to compile and to load from the compile
//! cache, percentiles of single calls (which criterion's per-sample means
//! hide), the throughput of one and of two threads calling at once, and the
//! resident memory each busy instance adds.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use airlock::registry::footprint::Footprint;
use airlock::registry::{Registry, ToolEntry};
use airlock::runtime::{Runtime, RuntimeLimits, wit};
use airlock::units::format_size_approx;
use criterion::{Criterion, criterion_group, criterion_main};

/// One component and the call to measure on it.
struct Case {
    /// The language and component, for the report (`python/py_hash`).
    label: &'static str,
    /// The component file, relative to the target directory.
    file: &'static str,
    /// What builds it, named when it is missing.
    build: &'static str,
    tool: &'static str,
    args: &'static str,
}

const CASES: &[Case] = &[
    Case {
        label: "rust/hash",
        file: "wasm32-wasip2/release/hash.wasm",
        build: "cargo build --release --target wasm32-wasip2 -p hash",
        tool: "sha256",
        args: r#"{"text":"hello, world"}"#,
    },
    Case {
        label: "rust/probe",
        file: "wasm32-wasip2/release/probe.wasm",
        build: "cargo build --release --target wasm32-wasip2 -p probe",
        tool: "count",
        args: "{}",
    },
    // A call that needs more heap than its initial memory holds: the guest
    // grows its linear memory, and the slot is shrunk back when it is reset.
    Case {
        label: "rust/probe-grow",
        file: "wasm32-wasip2/release/probe.wasm",
        build: "cargo build --release --target wasm32-wasip2 -p probe",
        tool: "big_output",
        args: r#"{"bytes":262144}"#,
    },
    Case {
        label: "python/py_hash",
        file: "python-tools/py_hash.wasm",
        build: "scripts/build-python-tools",
        tool: "sha256",
        args: r#"{"text":"hello, world"}"#,
    },
    Case {
        label: "javascript/js_hash",
        file: "javascript-tools/js_hash.wasm",
        build: "scripts/build-javascript-tools",
        tool: "sha256",
        args: r#"{"text":"hello, world"}"#,
    },
];

/// Threads calling at once while the resident memory per busy instance is
/// measured (more than the cores, so that instances are held mid-call).
const BUSY_THREADS: usize = 16;

/// Cargo's target directory (where the components are built).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        Some(dir) => Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
    }
}

fn round() -> wit::Round {
    wit::Round::first(wit::ClientCapabilities::NONE)
}

/// A registry of `case`'s one component, loaded twice through a fresh
/// compile cache: the first load compiles, the second loads the artifact.
/// Prints both times and the component's footprint.
fn load(rt: &tokio::runtime::Runtime, runtime: &Arc<Runtime>, case: &Case) -> Option<Registry> {
    let component = target_dir().join(case.file);
    if !component.is_file() {
        eprintln!(
            "SKIPPED {}: {} is missing; build it first with `{}`",
            case.label,
            component.display(),
            case.build
        );
        return None;
    }
    let work = tempfile::tempdir().ok()?;
    let tools = work.path().join("tools");
    std::fs::create_dir(&tools).ok()?;
    std::fs::copy(&component, tools.join(component.file_name()?)).ok()?;
    let cache = work.path().join("cache");
    let timed_load = || {
        let started = Instant::now();
        let registry = rt.block_on(Registry::load(runtime, &tools, Some(&cache)));
        (registry, started.elapsed())
    };
    let (_, compiled) = timed_load();
    let (registry, cached) = timed_load();
    let footprint = Footprint::of(&component, runtime.limits().max_component_bytes).ok()?;
    println!(
        "{:<20} size {}, {} core modules, initial memory {}; load: compiled {:.2} s, from the cache {:.1} ms",
        case.label,
        format_size_approx(footprint.file_bytes),
        footprint.core_modules,
        format_size_approx(footprint.initial_memory_bytes),
        compiled.as_secs_f64(),
        cached.as_secs_f64() * 1e3,
    );
    registry.ok()
}

fn call(rt: &tokio::runtime::Runtime, runtime: &Runtime, entry: &ToolEntry, args: &str) {
    let outcome = rt.block_on(entry.call(runtime, args, &round(), None));
    assert!(outcome.is_ok(), "{:?}", outcome.err());
}

/// Times single calls for about two seconds and prints their percentiles.
fn percentiles(rt: &tokio::runtime::Runtime, runtime: &Runtime, entry: &ToolEntry, case: &Case) {
    let warm_up = Instant::now();
    let mut warm_calls = 0u32;
    while warm_up.elapsed() < Duration::from_millis(500) {
        call(rt, runtime, entry, case.args);
        warm_calls += 1;
    }
    // As many calls as fit in about two seconds, at least 200.
    let n = ((warm_calls as usize) * 4).max(200);
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let started = Instant::now();
        call(rt, runtime, entry, case.args);
        times.push(started.elapsed());
    }
    times.sort();
    let at = |p: f64| times[((n as f64 * p) as usize).min(n - 1)];
    let micros = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{:<20} single calls (n={n}): median {:.1} µs, p90 {:.1} µs, p99 {:.1} µs, p99.9 {:.1} µs, max {:.1} µs",
        case.label,
        micros(at(0.5)),
        micros(at(0.9)),
        micros(at(0.99)),
        micros(at(0.999)),
        micros(times[n - 1]),
    );
}

/// Runs `threads` threads, each with its own current-thread tokio runtime,
/// calling `case`'s tool for `window`; the calls per second.
fn call_from_threads(
    runtime: &Arc<Runtime>,
    registry: &Arc<Registry>,
    case: &Case,
    threads: usize,
    window: Duration,
) -> f64 {
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (runtime, registry) = (runtime.clone(), registry.clone());
            let (tool, args) = (case.tool, case.args);
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let entry = registry.find(tool).unwrap();
                let started = Instant::now();
                let mut calls = 0u64;
                while started.elapsed() < window {
                    call(&rt, &runtime, entry, args);
                    calls += 1;
                }
                calls as f64 / started.elapsed().as_secs_f64()
            })
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).sum()
}

/// This process's resident memory, in bytes (Linux; 0 elsewhere).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

fn fresh_instance(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let runtime = Runtime::new(RuntimeLimits::default()).unwrap();
    let mut loaded = Vec::new();
    for case in CASES {
        let Some(registry) = load(&rt, &runtime, case) else {
            continue;
        };
        let registry = Arc::new(registry);
        let entry = registry.find(case.tool).unwrap();
        percentiles(&rt, &runtime, entry, case);
        let window = Duration::from_secs(1);
        let one = call_from_threads(&runtime, &registry, case, 1, window);
        let two = call_from_threads(&runtime, &registry, case, 2, window);
        println!(
            "{:<20} throughput: {one:.0} calls/s on 1 thread, {two:.0} calls/s on 2 threads",
            case.label
        );
        let before = resident_bytes();
        call_from_threads(&runtime, &registry, case, BUSY_THREADS, window);
        let added = resident_bytes().saturating_sub(before);
        println!(
            "{:<20} resident memory: +{} with {BUSY_THREADS} threads calling at once, {} per busy instance",
            case.label,
            format_size_approx(added),
            format_size_approx(added / BUSY_THREADS as u64),
        );
        loaded.push((case, registry));
    }
    let mut group = c.benchmark_group("fresh_instance");
    for (case, registry) in &loaded {
        let entry = registry.find(case.tool).unwrap();
        group.bench_function(format!("{}/{}", case.label, case.tool), |b| {
            b.iter(|| call(&rt, &runtime, entry, case.args))
        });
    }
    group.finish();
}

criterion_group!(benches, fresh_instance);
criterion_main!(benches);
