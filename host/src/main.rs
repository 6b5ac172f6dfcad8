//! The `airlock` command: serve MCP tools written as WebAssembly components.
//! Everything about the command line is in [`airlock::cli`].

use std::process::ExitCode;

/// Every request allocates and frees many small buffers (JSON, HTTP, stores);
/// mimalloc serves them faster than the system allocator.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    airlock::cli::main()
}
