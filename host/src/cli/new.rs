//! The options of `airlock new`, and the [`NewToolConfig`] they make.

use std::path::PathBuf;

use crate::scaffold::{self, Language, NewToolConfig, SdkSource};

/// Options of `airlock new`.
#[derive(Debug, Clone, clap::Args)]
pub struct NewOptions {
    /// The crate's or project's name, also its example tool's: ASCII letters, digits, `_` and
    /// `-`, starting with a letter, at most 64 (for a Rust crate, no Rust keyword either).
    pub name: String,
    /// The language of the tool: a Rust crate, or a project of one `app.py`
    /// or `app.js` that carries its build script.
    #[arg(long, value_enum, default_value_t = Language::Rust)]
    pub language: Language,
    /// The directory to create the crate's or project's directory in.
    #[arg(long, value_name = "PARENT", default_value = ".")]
    pub dir: PathBuf,
    /// Take the airlock-guest SDK from this directory (a checkout's `guest-sdk`) instead of
    /// writing the one this binary carries into the crate's `vendor/airlock-guest`
    /// (Rust only).
    #[arg(long, value_name = "PATH")]
    pub sdk_path: Option<PathBuf>,
}

impl NewOptions {
    /// What to create, and where.
    pub fn into_config(self) -> NewToolConfig {
        NewToolConfig {
            name: self.name,
            parent: self.dir,
            sdk: self.sdk_path.map_or(SdkSource::Carried, SdkSource::Path),
            language: self.language,
        }
    }
}

/// Creates the crate or project and says where, and what next.
pub(super) fn run(options: NewOptions) -> anyhow::Result<()> {
    let (name, language) = (options.name.clone(), options.language);
    let dir = scaffold::create(&options.into_config())?;
    println!(
        "created {}: build it with `{}` there, which makes {} (its README.md says how to serve it)",
        dir.display(),
        scaffold::build_command(language),
        dir.join(scaffold::component_path(&name, language))
            .display()
    );
    Ok(())
}
