//! How long `airlock serve` takes to start listening with many distinct
//! components in its tools directory: with an empty compile cache (every
//! component compiled) and with a warm one (every component loaded from the
//! cache), each on every core the machine has and on one core alone (so the
//! difference says what loading and compiling in parallel is worth).
//!
//! The components are copies of the `numbered` test guest, each stamped with
//! its own number ([`airlock_e2e::numbered`]): distinct bytes (a compile-cache
//! entry each) and distinct tool names, as a directory of different tools
//! would be.
//!
//! Needs the release host and the guest built first:
//!
//! ```text
//! cargo build --release -p airlock
//! cargo build --release --target wasm32-wasip2 -p numbered
//! cargo bench -p airlock --bench startup
//! ```
//!
//! `STARTUP_COMPONENTS` (default 50) and `STARTUP_RUNS` (warm starts per
//! setting, default 10) change the sizes. One core is `taskset -c 0`; without
//! `taskset` on the `PATH` those rows are skipped, with a note.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use airlock::units::format_size_approx;
use airlock_e2e::numbered::{numbered_components, numbered_tool};
use airlock_e2e::paths::airlock_bin;

/// How long one start may take before the bench gives up on it.
const START_LIMIT: Duration = Duration::from_secs(600);

fn main() {
    // `cargo bench` passes `--bench`; this harness takes no options.
    let components = env_number("STARTUP_COMPONENTS", 50);
    let runs = env_number("STARTUP_RUNS", 10);
    let work = tempfile::tempdir().expect("a temporary directory");
    let tools = work.path().join("tools");
    std::fs::create_dir(&tools).expect("create the tools directory");
    let copies = numbered_components(components);
    for (number, copy) in copies.iter().enumerate() {
        let file = tools.join(format!("{}.wasm", numbered_tool(number)));
        std::fs::write(file, copy).expect("write a component");
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "{components} components of {} each, airlock {}",
        format_size_approx(copies[0].len() as u64),
        airlock_bin().display()
    );
    let mut settings = vec![(format!("{cores} cores"), None)];
    if cores > 1 {
        match Command::new("taskset").arg("-V").output() {
            Ok(_) => settings.push(("1 core".to_owned(), Some("0"))),
            Err(_) => println!("SKIPPED the one-core rows: `taskset` is not on the PATH"),
        }
    }
    println!(
        "| cores | cache | start to listening | compile per component (median, each while the others ran) |"
    );
    println!("|---|---|---|---|");
    for (label, cpus) in &settings {
        let cache = work
            .path()
            .join(format!("cache-{}", label.replace(' ', "-")));
        let cold = start(&tools, &cache, *cpus);
        assert_eq!(
            cold.compiled.len(),
            components,
            "every component compiles on a cold start"
        );
        println!(
            "| {label} | cold | {:.2} s | {} ms |",
            cold.listening.as_secs_f64(),
            median(cold.compiled.clone()).as_millis()
        );
        let warm: Vec<_> = (0..runs)
            .map(|_| {
                let started = start(&tools, &cache, *cpus);
                assert!(started.compiled.is_empty(), "warm starts compile nothing");
                started.listening
            })
            .collect();
        let mut sorted = warm.clone();
        sorted.sort();
        println!(
            "| {label} | warm | median {:.1} ms (min {:.1}, max {:.1}; {runs} starts) | – |",
            millis(median(warm)),
            millis(sorted[0]),
            millis(sorted[sorted.len() - 1]),
        );
    }
}

/// One start of the server.
struct Started {
    /// From spawning the process to its `listening on` line.
    listening: Duration,
    /// The compile time each component reported, if it was compiled.
    compiled: Vec<Duration>,
}

/// Starts `airlock serve` on `tools` with the compile cache in `cache`
/// (pinned to `cpus` with `taskset` if given), times it until it listens,
/// and stops it.
fn start(tools: &Path, cache: &Path, cpus: Option<&str>) -> Started {
    let mut command = match cpus {
        Some(cpus) => {
            let mut taskset = Command::new("taskset");
            taskset.args(["-c", cpus]).arg(airlock_bin());
            taskset
        }
        None => Command::new(airlock_bin()),
    };
    command
        .arg("serve")
        .arg("--tools")
        .arg(tools)
        .arg("--cache-dir")
        .arg(cache)
        .args(["--listen", "127.0.0.1:0"])
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("AIRLOCK_") {
            command.env_remove(key);
        }
    }
    let started = Instant::now();
    let mut child = command.spawn().expect("start airlock");
    let stderr = child.stderr.take().expect("piped stderr");
    let mut compiled = Vec::new();
    let mut listening = None;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("read airlock's stderr");
        if let Some(millis) = compile_millis(&line) {
            compiled.push(Duration::from_millis(millis));
        }
        if line.contains("listening on") {
            listening = Some(started.elapsed());
            break;
        }
        assert!(
            started.elapsed() < START_LIMIT,
            "airlock did not listen within {START_LIMIT:?}"
        );
    }
    stop(child);
    Started {
        listening: listening.expect("airlock exited before listening"),
        compiled,
    }
}

/// The milliseconds of a `loaded component (compiled in N ms)` log line.
fn compile_millis(line: &str) -> Option<u64> {
    let rest = &line[line.find("compiled in ")? + "compiled in ".len()..];
    rest.split(' ').next()?.parse().ok()
}

/// Ends the server (SIGTERM through `kill`, then waits).
fn stop(mut child: Child) {
    let terminated = Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .is_ok_and(|status| status.success());
    if !terminated {
        let _ = child.kill();
    }
    let _ = child.wait();
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn millis(time: Duration) -> f64 {
    time.as_secs_f64() * 1e3
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}
