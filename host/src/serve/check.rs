//! `airlock serve --check`: what the settings would serve, or why they
//! would not. The start sequence of [`super::run`] reads the settings and
//! the key, token and access files and loads the tools directory, then
//! hands the registry here instead of serving it.

use std::path::Path;

use anyhow::bail;

use crate::registry::Registry;

/// Logs what `registry` (loaded from `dir`) serves, and fails if a
/// component of the directory was skipped (its reason is logged already).
pub(super) fn report(registry: &Registry, dir: &Path) -> anyhow::Result<()> {
    let files = registry.component_files().len();
    let skipped = files - registry.component_count();
    if skipped > 0 {
        bail!(
            "{skipped} of the {files} components in {} would be skipped (the log above says why)",
            dir.display()
        );
    }
    tracing::info!(
        "check passed: {files} components in {}: {} tools, {} prompts, {} resources, {} resource templates",
        dir.display(),
        registry.tools().len(),
        registry.prompts().len(),
        registry.resources().len(),
        registry.templates().len(),
    );
    Ok(())
}
