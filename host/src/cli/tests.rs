//! The command line: units, ranges and checks at parse time, environment
//! variables, the configuration file and its precedence, the generated page.
//!
//! Parsing here uses the definitions without environment variables, so the
//! tests do not depend on the environment they run in; the environment's
//! place in the precedence is checked end to end (tests/tests/configuration.rs).

use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use clap::CommandFactory;

use super::*;
use crate::access::CallerLimits;
use crate::legacy::BridgeSettings;
use crate::registry::input_schema::ViolationLimits;
use crate::runtime::RuntimeLimits;
use crate::serve::{ServeConfig, SingleUseStore, Transport};
use crate::transport::http::ConnectionLimits;

fn args(args: &[&str]) -> Vec<OsString> {
    std::iter::once("airlock")
        .chain(args.iter().copied())
        .map(OsString::from)
        .collect()
}

fn parse(list: &[&str]) -> Result<Cli, clap::Error> {
    parse_with(Cli::command(), args(list))
}

fn serve(list: &[&str]) -> ServeConfig {
    let mut all = vec!["serve"];
    all.extend_from_slice(list);
    match parse(&all)
        .unwrap_or_else(|e| panic!("{all:?}: {e}"))
        .command
    {
        Command::Serve(options) => options.into_config(),
        other => panic!("not serve: {other:?}"),
    }
}

/// The message of the error `airlock serve <list>` stops with.
fn refusal(list: &[&str]) -> String {
    let mut all = vec!["serve"];
    all.extend_from_slice(list);
    match parse(&all) {
        Ok(cli) => panic!("{all:?} was accepted: {cli:?}"),
        Err(error) => error.to_string(),
    }
}

fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("a temporary file");
    file.write_all(text.as_bytes()).unwrap();
    file
}

fn path(file: &tempfile::NamedTempFile) -> &str {
    file.path().to_str().unwrap()
}

#[test]
fn the_defaults_are_the_libraries_defaults() {
    let config = serve(&[]);
    assert_eq!(config.sandbox.limits, RuntimeLimits::default());
    assert_eq!(config.sandbox.secrets_file, None);
    let connections = ConnectionLimits::default();
    assert_eq!(
        (
            config.connections.header_timeout,
            config.connections.body_timeout,
            config.connections.idle_timeout,
            config.connections.max_connections
        ),
        (
            connections.header_timeout,
            connections.body_timeout,
            connections.idle_timeout,
            connections.max_connections
        )
    );
    let bridge = BridgeSettings::default();
    assert_eq!(config.bridge.max_rounds, bridge.max_rounds);
    assert_eq!(config.bridge.answer_timeout, bridge.answer_timeout);
    assert_eq!(config.protocol.max_rounds, 32);
    assert_eq!(config.protocol.violations, ViolationLimits::default());
    assert_eq!(config.protocol.heavy_checks.concurrent(), 1);
    assert_eq!(config.auth.jwt_caller_limits, CallerLimits::default());
    assert_eq!(
        config.transport,
        Transport::Http("127.0.0.1:8080".parse().unwrap())
    );
    assert_eq!(config.tools.as_deref(), Some(Path::new("tools")));
    assert_eq!(config.load_wait, Duration::from_secs(30));
    assert_eq!(config.max_body_bytes, 4 << 20);
    assert_eq!(config.state_ttl, Duration::from_secs(600));
    assert_eq!(config.single_use, None);
    assert_eq!(config.reload_every, Some(Duration::from_millis(500)));
    assert_eq!(config.relist_every, Duration::from_secs(1));
    assert_eq!(config.max_sessions, 1024);
    assert_eq!(config.session_idle_timeout, Duration::from_secs(1800));
    assert_eq!(config.rate_limit, None);
    assert_eq!(config.max_sessions_per_principal, None);
}

#[test]
fn quotas_take_a_rate_a_burst_and_a_session_count() {
    let config = serve(&[
        "--rate-limit",
        "600/min",
        "--max-sessions-per-principal",
        "3",
    ]);
    let limit = config.rate_limit.expect("a rate limit");
    assert_eq!(
        limit.to_string(),
        "600/min (burst 600)",
        "one period's worth"
    );
    assert_eq!(config.max_sessions_per_principal, Some(3));
    let config = serve(&["--rate-limit", "5/10s", "--rate-limit-burst", "2"]);
    assert_eq!(
        config.rate_limit.map(|limit| limit.to_string()),
        Some("5/10s (burst 2)".to_owned())
    );
    assert_eq!(
        serve(&["--max-sessions-per-principal", "0"]).max_sessions_per_principal,
        None,
        "0 is no limit"
    );
}

#[test]
fn durations_and_sizes_are_written_with_their_unit() {
    let config = serve(&[
        "--call-timeout=2s",
        "--max-memory=32MiB",
        "--max-output=256KiB",
        "--max-http-fields=8KiB",
        "--max-body=1MiB",
        "--state-ttl=1h",
        "--session-idle-timeout=90s",
        "--client-answer-timeout=1m 30s",
        "--http-header-timeout=250ms",
        "--http-body-timeout=3s",
        "--http-idle-timeout=2m",
        "--reload-interval=50ms",
        "--relist-interval=0s",
    ]);
    let limits = &config.sandbox.limits;
    assert_eq!(limits.call_timeout, Duration::from_secs(2));
    assert_eq!(limits.max_memory_bytes, 32 << 20);
    assert_eq!(limits.max_output_bytes, 256 << 10);
    assert_eq!(limits.max_http_fields_bytes, 8 << 10);
    assert_eq!(config.max_body_bytes, 1 << 20);
    assert_eq!(config.state_ttl, Duration::from_secs(3600));
    assert_eq!(config.session_idle_timeout, Duration::from_secs(90));
    assert_eq!(config.bridge.answer_timeout, Duration::from_secs(90));
    assert_eq!(
        config.connections.header_timeout,
        Duration::from_millis(250)
    );
    assert_eq!(config.connections.body_timeout, Duration::from_secs(3));
    assert_eq!(config.connections.idle_timeout, Duration::from_secs(120));
    assert_eq!(config.reload_every, Some(Duration::from_millis(50)));
    assert_eq!(config.relist_every, Duration::ZERO);
}

#[test]
fn reloading_can_be_turned_off() {
    assert_eq!(serve(&["--reload-interval", "off"]).reload_every, None);
    assert_eq!(serve(&["--reload-interval", "0s"]).reload_every, None);
}

#[test]
fn max_queued_calls_reaches_the_runtime() {
    let config = serve(&["--max-concurrent-calls", "1", "--max-queued-calls", "3"]);
    assert_eq!(config.sandbox.limits.max_concurrent_calls, 1);
    assert_eq!(config.sandbox.limits.max_queued_calls, 3);
    assert_eq!(
        serve(&["--max-queued-calls", "0"])
            .sandbox
            .limits
            .max_queued_calls,
        0
    );
}

#[test]
fn max_concurrent_checks_reaches_the_protocol() {
    let config = serve(&["--max-concurrent-checks", "3"]);
    assert_eq!(config.protocol.heavy_checks.concurrent(), 3);
}

#[test]
fn worker_threads_default_to_the_cpus_and_can_be_set() {
    assert_eq!(serve(&[]).worker_threads, None);
    assert_eq!(serve(&["--worker-threads", "1"]).worker_threads, Some(1));
}

#[test]
fn bad_values_are_refused_when_parsed() {
    for (list, expected) in [
        (&["--call-timeout", "10"][..], "`10` has no unit: add one"),
        (&["--max-memory", "64"], "`64` has no unit: add one"),
        (&["--max-memory", "64MB"], "use B, KiB, MiB, GiB or TiB"),
        (&["--max-memory", "8GiB"], "must be between 1MiB and 4GiB"),
        (&["--max-memory", "512KiB"], "must be between 1MiB and 4GiB"),
        (&["--call-timeout", "0s"], "must be at least 1ms"),
        (&["--max-output", "100B"], "must be at least 1KiB"),
        (
            &["--max-http-fields", "17MiB"],
            "must be between 1KiB and 16MiB",
        ),
        (&["--state-ttl", "500ms"], "must be at least 1s"),
        (&["--reload-interval", "500"], "or `off`"),
        (&["--max-concurrent-calls", "0"], "not in 1..=10000"),
        (&["--worker-threads", "0"], "not in 1..=1024"),
        (&["--max-host-resources", "8"], "not in 16..=1000000"),
        (
            &["--allowed-origin", "app.example.com"],
            "give a full origin with its scheme",
        ),
        (&["--allowed-origin", "https://app.example.com/"], "no path"),
        (&["--listen", "localhost"], "invalid socket address"),
        (&["--single-use-capacity", "5"], "--single-use-state"),
        (
            &["--single-use-store", "cache:6379"],
            "redis://HOST:PORT/DB",
        ),
        (
            &[
                "--single-use-store",
                "redis://cache:6379/0",
                "--single-use-capacity",
                "5",
            ],
            "cannot be used with",
        ),
        (&["--call-timeout-ms", "1000"], "unexpected argument"),
        (
            &["--rate-limit", "50"],
            "is not a rate: write requests per period",
        ),
        (&["--rate-limit", "0/s"], "whole number from 1"),
        (&["--rate-limit-burst", "5"], "--rate-limit <RATE>"),
        (
            &["--rate-limit", "5/s", "--rate-limit-burst", "0"],
            "not in 1..",
        ),
    ] {
        let message = refusal(list);
        assert!(message.contains(expected), "{list:?}: {message}");
    }
}

#[test]
fn single_use_is_kept_in_memory_or_in_the_redis_named() {
    assert_eq!(
        serve(&["--single-use-state", "--single-use-capacity", "7"]).single_use,
        Some(SingleUseStore::Memory { capacity: 7 })
    );
    let shared = Some(SingleUseStore::Redis("redis://cache:6379/1".to_owned()));
    // The store implies single use, with or without --single-use-state.
    assert_eq!(
        serve(&["--single-use-store", "redis://cache:6379/1"]).single_use,
        shared
    );
    assert_eq!(
        serve(&[
            "--single-use-state",
            "--single-use-store",
            "redis://cache:6379/1"
        ])
        .single_use,
        shared
    );
}

#[test]
fn traces_are_off_unless_an_endpoint_is_given() {
    assert_eq!(serve(&[]).traces, None);
    let traces = serve(&["--otlp-endpoint", "http://collector:4318/"])
        .traces
        .expect("traces on");
    assert_eq!(traces.traces_url(), "http://collector:4318/v1/traces");
    assert_eq!(traces.sample_ratio, 1.0);
    assert_eq!(traces.export_timeout, Duration::from_secs(10));
    let sampled = serve(&[
        "--otlp-endpoint",
        "http://collector:4318",
        "--otlp-sample-ratio",
        "0.25",
        "--otlp-timeout",
        "2s",
    ])
    .traces
    .expect("traces on");
    assert_eq!(sampled.sample_ratio, 0.25);
    assert_eq!(sampled.export_timeout, Duration::from_secs(2));
    for (list, expected) in [
        (
            &["--otlp-endpoint", "https://collector:4318"][..],
            "https is not supported",
        ),
        (&["--otlp-endpoint", "collector:4318"], "http://HOST:PORT"),
        (&["--otlp-sample-ratio", "0.5"], "--otlp-endpoint"),
        (&["--otlp-timeout", "1s"], "--otlp-endpoint"),
        (
            &[
                "--otlp-endpoint",
                "http://collector:4318",
                "--otlp-timeout",
                "0s",
            ],
            "at least",
        ),
    ] {
        let message = refusal(list);
        assert!(message.contains(expected), "{list:?}: {message}");
    }
}

#[test]
fn the_metrics_listener_has_a_cap_of_its_own() {
    assert_eq!(serve(&[]).metrics, None);
    let listen = serve(&["--metrics-listen", "127.0.0.1:9464"])
        .metrics
        .expect("metrics on");
    assert_eq!(listen.address.to_string(), "127.0.0.1:9464");
    assert_eq!(listen.max_connections, 16);
    let capped = serve(&[
        "--metrics-listen",
        "127.0.0.1:0",
        "--metrics-max-connections",
        "4",
    ]);
    assert_eq!(capped.metrics.map(|listen| listen.max_connections), Some(4));
    for (list, expected) in [
        (&["--metrics-max-connections", "4"][..], "--metrics-listen"),
        (
            &[
                "--metrics-listen",
                "127.0.0.1:0",
                "--metrics-max-connections",
                "0",
            ],
            "0",
        ),
    ] {
        let message = refusal(list);
        assert!(message.contains(expected), "{list:?}: {message}");
    }
}

#[test]
fn every_option_has_its_environment_variable() {
    let command = command();
    let mut seen = 0;
    for subcommand in command.get_subcommands() {
        for arg in subcommand.get_arguments() {
            let Some(long) = arg.get_long() else {
                continue;
            };
            if !matches!(
                arg.get_action(),
                clap::ArgAction::Set | clap::ArgAction::Append | clap::ArgAction::SetTrue
            ) {
                continue;
            }
            let expected = format!("AIRLOCK_{}", long.to_ascii_uppercase().replace('-', "_"));
            assert_eq!(
                arg.get_env().map(|e| e.to_string_lossy().into_owned()),
                Some(expected),
                "--{long} of {}",
                subcommand.get_name()
            );
            seen += 1;
        }
    }
    assert!(seen >= 45, "only {seen} options had a variable");
    assert_eq!(
        environment::variable("call-timeout"),
        "AIRLOCK_CALL_TIMEOUT"
    );
}

#[test]
fn the_file_fills_in_what_the_command_line_does_not_give() {
    let file = config_file(
        "call-timeout = \"3s\"\nmax-memory = \"16MiB\"\nallowed-host = [\"a.example\", \"b.example\"]\n\
         stdio = true\nsingle-use-state = true\nmax-rounds = 7\n",
    );
    // File over default.
    let config = serve(&["--config", path(&file)]);
    assert_eq!(config.sandbox.limits.call_timeout, Duration::from_secs(3));
    assert_eq!(config.sandbox.limits.max_memory_bytes, 16 << 20);
    assert_eq!(config.allowed_hosts, ["a.example", "b.example"]);
    assert_eq!(config.transport, Transport::Stdio);
    assert!(config.single_use.is_some());
    assert_eq!(config.protocol.max_rounds, 7);
    // Command line over file, a list included (not merged with the file's).
    let config = serve(&[
        "--config",
        path(&file),
        "--call-timeout",
        "5s",
        "--allowed-host",
        "c.example",
    ]);
    assert_eq!(config.sandbox.limits.call_timeout, Duration::from_secs(5));
    assert_eq!(config.sandbox.limits.max_memory_bytes, 16 << 20);
    assert_eq!(config.allowed_hosts, ["c.example"]);
    // The option may come after the others, or with `=`.
    let config = serve(&["--max-rounds", "9", &format!("--config={}", path(&file))]);
    assert_eq!(config.protocol.max_rounds, 9);
    assert_eq!(config.sandbox.limits.call_timeout, Duration::from_secs(3));
}

#[test]
fn a_false_flag_in_the_file_leaves_it_off() {
    let file = config_file("stdio = false\n");
    assert_eq!(
        serve(&["--config", path(&file)]).transport,
        Transport::Http("127.0.0.1:8080".parse().unwrap())
    );
}

#[test]
fn bad_files_are_refused_naming_the_file_the_key_and_why() {
    for (text, expected) in [
        ("call-timout = \"3s\"\n", "`call-timout`: unknown key"),
        (
            "call-timeout = 3000\n",
            "`call-timeout`: `3000` has no unit: add one",
        ),
        (
            "max-memory = \"1TiB\"\n",
            "`max-memory`: `1TiB`: must be between 1MiB and 4GiB",
        ),
        ("stdio = \"yes\"\n", "`stdio`: expected true or false"),
        (
            "listen = [\"127.0.0.1:1\"]\n",
            "`listen`: takes one value, not a list",
        ),
        (
            "allowed-origin = [\"example.com\"]\n",
            "`allowed-origin`: `example.com`: give a full origin",
        ),
        (
            "max-rounds = 0\n",
            "`max-rounds`: 0 is not in 1..=4294967295",
        ),
        ("limits = { memory = \"1MiB\" }\n", "`limits`: unknown key"),
        (
            "tools = { dir = \"x\" }\n",
            "`tools`: expected a string, a number or a boolean",
        ),
        (
            "config = \"other.toml\"\n",
            "`config`: a configuration file cannot name another one",
        ),
        ("call-timeout = \n", "expected"),
    ] {
        let file = config_file(text);
        let message = refusal(&["--config", path(&file)]);
        assert!(message.contains(path(&file)), "{text}: {message}");
        assert!(message.contains(expected), "{text}: {message}");
    }
    let message = refusal(&["--config", "/nonexistent/airlock.toml"]);
    assert!(
        message.contains("cannot read the configuration file /nonexistent/airlock.toml"),
        "{message}"
    );
}

#[test]
fn inspect_reads_the_sandbox_options_from_the_same_file() {
    let file = config_file("max-memory = \"48MiB\"\nlisten = \"0.0.0.0:1\"\n");
    let cli = parse(&["inspect", "tool.wasm", "--config", path(&file)]).unwrap();
    let Command::Inspect(options) = cli.command else {
        panic!("not inspect: {cli:?}");
    };
    let config = options.into_config();
    assert_eq!(config.sandbox.limits.max_memory_bytes, 48 << 20);
    assert_eq!(config.component, Path::new("tool.wasm"));
    let unknown = config_file("nonsense = 1\n");
    let error = parse(&["inspect", "tool.wasm", "--config", path(&unknown)]).unwrap_err();
    assert!(
        error.to_string().contains("`nonsense`: unknown key"),
        "{error}"
    );
}

#[test]
fn the_example_file_of_the_page_is_accepted() {
    let file = config_file(doc::EXAMPLE_FILE);
    let config = serve(&["--config", path(&file)]);
    assert_eq!(config.sandbox.limits.call_timeout, Duration::from_secs(30));
    assert_eq!(config.reload_every, None);
}

#[test]
fn config_doc_is_up_to_date() {
    // The checkout being tested (cargo sets the variable when it runs a test),
    // which may not be the one this executable was compiled in.
    let host_dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let committed_path = std::path::Path::new(&host_dir).join("../docs/configuration.md");
    let committed = std::fs::read_to_string(committed_path).unwrap_or_default();
    let generated = doc::configuration(&command());
    assert!(
        committed == generated,
        "docs/configuration.md differs from the option definitions; regenerate it with:\n    {}",
        doc::REGENERATE
    );
    for option in [
        "--max-queued-calls",
        "--call-timeout DURATION",
        "`AIRLOCK_MAX_MEMORY`",
        "`64MiB`",
    ] {
        assert!(
            generated.contains(option),
            "{option} is missing from the page"
        );
    }
}

#[test]
fn no_manifest_may_copy_airlocks_own_configuration() {
    let own = serve(&[]).sandbox.own_variables;
    for variable in [
        "AIRLOCK_TASK_STORE",
        "AIRLOCK_SINGLE_USE_STORE",
        "AIRLOCK_STATE_KEYS_FILE",
        "AIRLOCK_OTLP_ENDPOINT",
        "AIRLOCK_MAX_COMPONENT_SIZE",
        "AIRLOCK_STATE_KEYS",
        "AIRLOCK_REGISTRY_TOKEN",
        "AIRLOCK_REGISTRY_BASIC_AUTH",
    ] {
        assert!(own.contains(variable), "{variable} is missing: {own:?}");
    }
    assert!(own.iter().all(|v| v.starts_with("AIRLOCK_")), "{own:?}");
}

#[test]
fn variables_read_besides_the_options_are_not_called_typos() {
    let names = [
        "AIRLOCK_LOG",
        "AIRLOCK_STATE_KEYS",
        "AIRLOCK_REGISTRY_TOKEN",
        "AIRLOCK_REGISTRY_BASIC_AUTH",
        "AIRLOCK_REGISTRY_TOKN",
    ];
    let unknown = environment::unknown_variables(&command(), names.map(OsString::from));
    assert_eq!(unknown, ["AIRLOCK_REGISTRY_TOKN"]);
}
