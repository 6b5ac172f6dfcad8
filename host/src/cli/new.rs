//! The options of `airlock new`, and the [`NewToolConfig`] they make.

use std::path::PathBuf;

use crate::scaffold::{self, NewToolConfig, SdkSource};

/// Options of `airlock new`.
#[derive(Debug, Clone, clap::Args)]
pub struct NewOptions {
    /// The crate's name, also its example tool's: ASCII letters, digits, `_` and `-`, starting
    /// with a letter, at most 64.
    #[arg(value_parser = name)]
    pub name: String,
    /// The directory to create the crate's directory in.
    #[arg(long, value_name = "PARENT", default_value = ".")]
    pub dir: PathBuf,
    /// Take the airlock-guest SDK from this directory (a checkout's `guest-sdk`) instead of
    /// writing the one this binary carries into the crate's `vendor/airlock-guest`.
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
        }
    }
}

/// Creates the crate and says where, and what next.
pub(super) fn run(options: NewOptions) -> anyhow::Result<()> {
    let name = options.name.clone();
    let dir = scaffold::create(&options.into_config())?;
    println!(
        "created {}: build it with `cargo build --release` there, which makes {} (its README.md says how to serve it)",
        dir.display(),
        dir.join(scaffold::component_path(&name)).display()
    );
    Ok(())
}

/// A name [`scaffold::check_name`] accepts.
fn name(name: &str) -> Result<String, String> {
    scaffold::check_name(name).map(|()| name.to_owned())
}
