//! The `airlock` command: serve MCP tools written as WebAssembly components.

use std::io::IsTerminal;
use std::process::ExitCode;

use airlock::logging::OneLinePerEvent;
use clap::{Parser, Subcommand};

/// Every request allocates and frees many small buffers (JSON, HTTP, stores);
/// mimalloc serves them faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Serve MCP tools written as WebAssembly components.
#[derive(Parser)]
#[command(name = "airlock", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load the tool components of a directory and serve them over Streamable HTTP or stdio.
    Serve(Box<airlock::serve::ServeOptions>),
    /// Print a new random key for sealing requestState (one line, base64url).
    Keygen,
    /// Load one component and print what it exports and serves, and the policy it would run under.
    Inspect(Box<airlock::inspect::InspectOptions>),
}

/// Logs to stderr, one line per event whatever the logged strings hold (see
/// [`OneLinePerEvent`]), in colour on a terminal.
fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("AIRLOCK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let colours = std::io::stderr().is_terminal();
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(OneLinePerEvent::new(std::io::stderr, colours))
        .with_ansi(colours)
        .init();
}

fn tokio_runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Keygen => {
            println!("{}", airlock::state::generate_key());
            Ok(())
        }
        Command::Serve(options) => {
            init_logging();
            tokio_runtime().and_then(|runtime| runtime.block_on(airlock::serve::run(*options)))
        }
        Command::Inspect(options) => tokio_runtime()
            .and_then(|runtime| runtime.block_on(airlock::inspect::run(*options)))
            .map(|report| print!("{report}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}
