//! The `airlock` command line: its subcommands and every option, the only
//! place clap is used. Options are checked when they are parsed (ranges,
//! units, origins, addresses), then turned into the plain settings the
//! rest of Airlock takes ([`ServeConfig`](crate::serve::ServeConfig),
//! [`InspectConfig`](crate::inspect::InspectConfig)).
//!
//! Where a setting comes from, first match wins: the command line, its
//! environment variable ([`environment`]), the `--config` file
//! ([`config_file`]), its default. `docs/configuration.md` is generated
//! from these definitions ([`doc`]).

mod access;
mod audit;
mod card;
mod config_file;
mod connections;
mod doc;
mod environment;
mod inspect;
mod legacy;
mod metrics;
mod new;
mod quotas;
mod sandbox;
mod serve;
mod supply;
mod tasks;
mod telemetry;
mod values;

use std::ffi::OsString;
use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use self::access::AccessOptions;
pub use self::audit::{AuditCommand, AuditOptions, VerifyOptions};
pub use self::connections::ConnectionOptions;
pub use self::inspect::InspectOptions;
pub use self::legacy::LegacyOptions;
pub use self::metrics::MetricsOptions;
pub use self::new::NewOptions;
pub use self::quotas::QuotaOptions;
pub use self::sandbox::SandboxOptions;
pub use self::serve::ServeOptions;
pub use self::supply::{PullOptions, SupplyOptions};
pub use self::tasks::TaskOptions;
pub use self::telemetry::TraceOptions;
use crate::logging::{LogFormat, OneLinePerEvent};

/// What `--help` of `serve` and `inspect` ends with.
const SETTINGS_HELP: &str = "\
Every option can also be set by an environment variable named after it (--call-timeout: \
AIRLOCK_CALL_TIMEOUT; lists comma-separated) or by a key of the --config file \
(call-timeout = \"10s\"); the command line wins over the environment, which wins over the file. \
Durations and sizes take a unit: 250ms, 10s, 5m, 1h; 1000B, 512KiB, 64MiB, 1GiB. \
All of them: docs/configuration.md.";

/// Serve MCP tools written as WebAssembly components.
#[derive(Debug, Parser)]
#[command(name = "airlock", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load the tool components of a directory and serve them over Streamable HTTP or stdio.
    #[command(after_help = SETTINGS_HELP)]
    Serve(Box<ServeOptions>),
    /// Resolve every component reference of --components, pull and check them into the pull
    /// cache, and write the --lock file of their digests.
    #[command(after_help = SETTINGS_HELP)]
    Pull(Box<PullOptions>),
    /// Print a new random key for sealing requestState (one line, base64url).
    Keygen,
    /// Load one component and print what it exports and serves, and the policy it would run under.
    #[command(after_help = SETTINGS_HELP)]
    Inspect(Box<InspectOptions>),
    /// Print docs/configuration.md, generated from these option definitions.
    #[command(hide = true)]
    ConfigDoc,
    /// Create a tool crate (one example tool, its unit tests, a README on building and serving).
    New(NewOptions),
    /// Work with audit trails.
    #[command(subcommand)]
    Audit(AuditCommand),
}

/// The command line's definition: [`Cli`] with every option's environment
/// variable.
pub fn command() -> clap::Command {
    environment::with_variables(Cli::command())
}

/// Parses `args` (the program name first) as `command` does, with the
/// settings of the `--config` file it names.
pub fn parse_with(command: clap::Command, args: Vec<OsString>) -> Result<Cli, clap::Error> {
    let (args, file) = config_file::with_file_arguments(&command, args)?;
    let matches = command
        .try_get_matches_from(args)
        .map_err(|error| match &file {
            Some(file) => file.explain(error),
            None => error,
        })?;
    Cli::from_arg_matches(&matches)
}

/// Runs `airlock` with this process's arguments and environment.
pub fn main() -> ExitCode {
    let cli = parse_with(command(), std::env::args_os().collect()).unwrap_or_else(|e| e.exit());
    let result = match cli.command {
        Command::Serve(options) => {
            init_logging(options.log_format);
            let unknown = environment::unknown_variables(
                &command(),
                std::env::vars_os().map(|(name, _)| name),
            );
            if options.check && !unknown.is_empty() {
                for name in &unknown {
                    eprintln!(
                        "error: {name} names no option (the options' variables: docs/configuration.md)"
                    );
                }
                return ExitCode::FAILURE;
            }
            for name in &unknown {
                tracing::warn!(
                    variable = %name,
                    "{name} names no option and is ignored (the options' variables: docs/configuration.md)"
                );
            }
            let config = options.into_config();
            tokio_runtime(config.worker_threads)
                .and_then(|runtime| runtime.block_on(crate::serve::run(config)))
        }
        Command::Pull(options) => {
            init_logging(LogFormat::Text);
            options.into_settings().and_then(|(settings, lock)| {
                tokio_runtime(None)?
                    .block_on(crate::supply::pull_and_lock(&settings, &lock))
                    .map(|()| println!("wrote {}", lock.display()))
            })
        }
        Command::Keygen => {
            println!("{}", crate::sealing::generate_key());
            Ok(())
        }
        Command::Inspect(options) => {
            let config = options.into_config();
            tokio_runtime(None)
                .and_then(|runtime| runtime.block_on(crate::inspect::run(config)))
                .map(|report| print!("{report}"))
        }
        Command::ConfigDoc => {
            print!("{}", doc::configuration(&command()));
            Ok(())
        }
        Command::New(options) => new::run(options),
        Command::Audit(command) => match command.run() {
            Ok(crate::audit::verify::Verdict::Whole) => Ok(()),
            Ok(crate::audit::verify::Verdict::Broken) => return ExitCode::FAILURE,
            Ok(crate::audit::verify::Verdict::Unproven) => return ExitCode::from(3),
            Err(error) => Err(error),
        },
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to stderr, one line per event whatever the logged strings hold (see
/// [`OneLinePerEvent`]): as text, in colour on a terminal, or as JSON;
/// `AIRLOCK_LOG` filters.
fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env(environment::LOG_FILTER)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    match format {
        LogFormat::Text => {
            let colours = std::io::stderr().is_terminal();
            tracing_subscriber::fmt()
                .with_env_filter(filter)
                .with_writer(OneLinePerEvent::new(std::io::stderr, colours))
                .with_ansi(colours)
                .init();
        }
        LogFormat::Json => {
            tracing_subscriber::util::SubscriberInitExt::init(crate::logging::json(
                filter,
                std::io::stderr,
            ));
        }
    }
}

/// The runtime `serve` and `inspect` run on: `worker_threads` threads, or
/// one per CPU this process may use.
fn tokio_runtime(worker_threads: Option<usize>) -> anyhow::Result<tokio::runtime::Runtime> {
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = worker_threads {
        builder.worker_threads(threads);
    }
    Ok(builder.enable_all().build()?)
}

#[cfg(test)]
mod tests;
