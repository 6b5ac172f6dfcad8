//! `airlock inspect NAME.wasm`: what a component exports, what it serves,
//! and the policy it would run under (its manifest resolved against these
//! options), without serving anything.

use std::fmt::Write as _;
use std::path::PathBuf;

use crate::policy::ProtectedPaths;
use crate::registry::describe_component;
use crate::serve::SandboxOptions;

/// Options of `airlock inspect`.
#[derive(Debug, Clone, clap::Args)]
pub struct InspectOptions {
    /// The component file (`NAME.wasm`; its manifest is `NAME.toml` beside it).
    pub component: PathBuf,
    /// The same defaults and grant sources `airlock serve` would use.
    #[command(flatten)]
    pub sandbox: SandboxOptions,
}

/// Loads the component and returns the report (or why it would be skipped).
pub async fn run(options: InspectOptions) -> anyhow::Result<String> {
    let tools = options
        .component
        .parent()
        .unwrap_or(std::path::Path::new("."));
    let runtime = options
        .sandbox
        .runtime(1, ProtectedPaths::default().no_write(tools))?;
    let description = describe_component(&runtime, &options.component)
        .await
        .map_err(|reason| {
            anyhow::anyhow!(
                "{} would not be loaded: {reason}",
                options.component.display()
            )
        })?;
    let mut out = String::new();
    let _ = writeln!(out, "component: {}", options.component.display());
    for line in description {
        let _ = writeln!(out, "{line}");
    }
    Ok(out)
}
