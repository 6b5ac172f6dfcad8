//! `airlock inspect NAME.wasm`: what a component exports, what it serves,
//! and the policy it would run under (its manifest resolved against the
//! server's sandbox settings), without serving anything. It uses the
//! default compile cache, as `airlock serve` does: a second inspect of a
//! component loads it instead of compiling it again.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::policy::ProtectedPaths;
use crate::registry::describe_component;
use crate::sandbox::SandboxSettings;

/// What `airlock inspect` looks at, and under which settings.
#[derive(Debug, Clone)]
pub struct InspectConfig {
    /// The component file (`NAME.wasm`; its manifest is `NAME.toml` beside it).
    pub component: PathBuf,
    /// The defaults and grant sources `airlock serve` would use.
    pub sandbox: SandboxSettings,
    /// The compile cache `airlock serve` uses by default; `None`: compile.
    pub cache_dir: Option<PathBuf>,
}

/// Loads the component and returns the report (or why it would be skipped).
pub async fn run(config: InspectConfig) -> anyhow::Result<String> {
    let tools = config.component.parent().unwrap_or(Path::new("."));
    // One instance at a time is all describing a component takes.
    let mut sandbox = config.sandbox.clone();
    sandbox.limits.max_concurrent_calls = 1;
    let mut protected = ProtectedPaths::default().no_write(tools);
    if let Some(cache_dir) = &config.cache_dir {
        protected = protected.no_write(cache_dir);
    }
    let runtime = sandbox.start(protected)?;
    let description = describe_component(&runtime, &config.component, config.cache_dir.as_deref())
        .await
        .map_err(|reason| {
            anyhow::anyhow!(
                "{} would not be loaded: {reason}",
                config.component.display()
            )
        })?;
    let mut out = String::new();
    let _ = writeln!(out, "component: {}", config.component.display());
    for line in description {
        let _ = writeln!(out, "{line}");
    }
    Ok(out)
}
