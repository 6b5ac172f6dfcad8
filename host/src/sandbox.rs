//! The sandbox's settings, shared by `airlock serve` and `airlock inspect`:
//! the server's limits (the defaults manifests may lower) and where the
//! secrets manifests may grant come from; and starting the runtime from them.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::policy::{PolicySources, ProtectedPaths, Secrets};
use crate::runtime::{Runtime, RuntimeLimits};

/// What every component runs under unless its manifest says less.
#[derive(Debug, Clone, Default)]
pub struct SandboxSettings {
    /// The server's limits.
    pub limits: RuntimeLimits,
    /// Secrets manifests may grant as environment variables (a TOML file of
    /// `name = "value"` lines); none without it.
    pub secrets_file: Option<PathBuf>,
    /// Airlock's own configuration variables, which no manifest may copy
    /// (see [`PolicySources::own_variables`]).
    pub own_variables: BTreeSet<String>,
}

impl SandboxSettings {
    /// Reads the secrets file and starts the WebAssembly runtime, with no
    /// grant exposing `protected` (nor the secrets file).
    pub fn start(&self, protected: ProtectedPaths) -> anyhow::Result<Arc<Runtime>> {
        let (secrets, protected) = match &self.secrets_file {
            None => (Secrets::default(), protected),
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read secrets file {}", path.display()))?;
                let secrets = Secrets::parse(&text, path).map_err(anyhow::Error::msg)?;
                (secrets, protected.no_access(path))
            }
        };
        let sources = PolicySources {
            secrets,
            protected,
            own_variables: self.own_variables.clone(),
        };
        Runtime::with_sources(self.limits.clone(), sources)
            .context("cannot start the WebAssembly runtime")
    }
}
