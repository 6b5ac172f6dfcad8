//! The options of `airlock inspect`, and the [`InspectConfig`] they make.

use std::path::PathBuf;

use super::sandbox::SandboxOptions;
use crate::inspect::InspectConfig;
use crate::runtime::RuntimeLimits;

/// Options of `airlock inspect`.
#[derive(Debug, Clone, clap::Args)]
pub struct InspectOptions {
    /// The component file (`NAME.wasm`; its manifest is `NAME.toml` beside it).
    pub component: PathBuf,
    /// The TOML file of settings `airlock serve` reads (keys of options inspect does not take
    /// are skipped).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The same defaults and grant sources `airlock serve` would use.
    #[command(flatten)]
    pub sandbox: SandboxOptions,
}

impl InspectOptions {
    /// What to inspect, under which settings.
    pub fn into_config(self) -> InspectConfig {
        InspectConfig {
            component: self.component,
            sandbox: self.sandbox.settings(RuntimeLimits::default()),
            cache_dir: crate::registry::default_cache_dir(),
        }
    }
}
