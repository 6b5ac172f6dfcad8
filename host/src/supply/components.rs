//! The components file: each component pulled by reference, by the name it
//! is loaded under, with its manifest.
//!
//! ```toml
//! [echo]
//! reference = "registry.example.com/tools/echo:1.2"
//! manifest = "echo.toml"          # a file, relative to this one
//!
//! [search]
//! reference = "registry.example.com/tools/search@sha256:…"
//! [search.manifest.limits]        # or inline
//! timeout = "5s"
//!
//! [scratch]
//! reference = "localhost:5000/dev/scratch:latest"
//! unsigned = true                 # no signature check (development)
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use oci_client::Reference;
use serde::Deserialize;

use crate::policy::manifest::Manifest;

/// Every component of a components file, by name.
#[derive(Debug, Clone)]
pub struct Components(Vec<Wanted>);

/// One component of the components file.
#[derive(Debug, Clone)]
pub struct Wanted {
    /// The name it is loaded under (its file name without `.wasm`).
    pub name: String,
    /// Where it is pulled from.
    pub reference: Reference,
    /// Its manifest's text (none: nothing granted, server defaults).
    pub manifest: Option<String>,
    /// Served without a signature check even when keys are trusted
    /// (`unsigned = true`, for development; logged loudly).
    pub unsigned: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    reference: String,
    manifest: Option<ManifestSource>,
    #[serde(default)]
    unsigned: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum ManifestSource {
    File(std::path::PathBuf),
    Inline(toml::Table),
}

impl Components {
    /// Reads and checks the components file at `path`.
    pub fn read(path: &Path) -> anyhow::Result<Components> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the components file {}", path.display()))?;
        Components::parse(&text, path).with_context(|| format!("{}", path.display()))
    }

    fn parse(text: &str, path: &Path) -> anyhow::Result<Components> {
        let entries: BTreeMap<String, Entry> = toml::from_str(text)?;
        let base = path.parent().unwrap_or(Path::new("."));
        let mut components = Vec::new();
        for (name, entry) in entries {
            check_name(&name)?;
            let reference = super::reference::parse(&entry.reference).map_err(|err| {
                anyhow::anyhow!("[{name}] reference = {:?}: {err}", entry.reference)
            })?;
            let manifest = match entry.manifest {
                None => None,
                Some(ManifestSource::File(file)) => {
                    let file = base.join(file);
                    let text = std::fs::read_to_string(&file).with_context(|| {
                        format!("[{name}] manifest: cannot read {}", file.display())
                    })?;
                    Manifest::parse(&text, &file)
                        .map_err(|why| anyhow::anyhow!("[{name}] {why}"))?;
                    let table: toml::Table = toml::from_str(&text)?;
                    Some(anchored(table, file.parent().unwrap_or(base))?)
                }
                Some(ManifestSource::Inline(table)) => {
                    let text = toml::to_string(&table)?;
                    Manifest::parse(&text, path)
                        .map_err(|why| anyhow::anyhow!("[{name}.manifest] {why}"))?;
                    Some(anchored(table, base)?)
                }
            };
            components.push(Wanted {
                name,
                reference,
                manifest,
                unsigned: entry.unsigned,
            });
        }
        Ok(Components(components))
    }

    /// Every component, by name.
    pub fn iter(&self) -> impl Iterator<Item = &Wanted> {
        self.0.iter()
    }
}

/// The text of the manifest `table`, its relative `[[dirs]] host` paths
/// made absolute from `base`: the manifest is staged in the pull cache, but
/// its paths mean what they say where it was written (beside the
/// components file, or its own file).
fn anchored(mut table: toml::Table, base: &Path) -> anyhow::Result<String> {
    let base =
        std::path::absolute(base).with_context(|| format!("cannot resolve {}", base.display()))?;
    let grants = table.get_mut("dirs").and_then(toml::Value::as_array_mut);
    for grant in grants.into_iter().flatten() {
        let host = grant.get_mut("host");
        if let Some(toml::Value::String(host)) = host
            && Path::new(host.as_str()).is_relative()
        {
            *host = base.join(host.as_str()).display().to_string();
        }
    }
    Ok(toml::to_string(&table)?)
}

/// A name is a file name: letters, digits, `-` and `_`.
fn check_name(name: &str) -> anyhow::Result<()> {
    let usable = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !usable {
        bail!("[{name}]: a component's name may hold only letters, digits, `-` and `_`");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_references_and_manifests_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("echo.toml"), "[limits]\ntimeout = \"5s\"\n").unwrap();
        let path = dir.path().join("components.toml");
        let text = r#"
            [echo]
            reference = "127.0.0.1:5000/tools/echo:1"
            manifest = "echo.toml"
            [plain]
            reference = "127.0.0.1:5000/tools/plain@sha256:0000000000000000000000000000000000000000000000000000000000000000"
            [inline]
            reference = "127.0.0.1:5000/tools/inline:2"
            [inline.manifest.limits]
            timeout = "1s"
        "#;
        let components = Components::parse(text, &path).unwrap();
        let names: Vec<_> = components.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(names, ["echo", "inline", "plain"]);
        let echo = components.iter().next().unwrap();
        assert_eq!(echo.reference.tag(), Some("1"));
        assert!(echo.manifest.as_deref().unwrap().contains("5s"));
        let inline = components.iter().nth(1).unwrap();
        assert!(inline.manifest.as_deref().unwrap().contains("1s"));
        assert!(components.iter().nth(2).unwrap().manifest.is_none());
    }

    #[test]
    fn relative_grant_paths_resolve_where_the_manifest_was_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("manifests")).unwrap();
        std::fs::write(
            dir.path().join("manifests/echo.toml"),
            "[[dirs]]\nhost = \"data\"\nguest = \"/data\"\n[[dirs]]\nhost = \"/srv/x\"\nguest = \"/x\"\n",
        )
        .unwrap();
        let path = dir.path().join("components.toml");
        let text = r#"
            [echo]
            reference = "127.0.0.1:5000/tools/echo:1"
            manifest = "manifests/echo.toml"
            [inline]
            reference = "127.0.0.1:5000/tools/inline:2"
            [[inline.manifest.dirs]]
            host = "notes"
            guest = "/notes"
        "#;
        let components = Components::parse(text, &path).unwrap();
        let host = |name: &str| {
            let wanted = components.iter().find(|w| w.name == name).unwrap();
            let manifest = Manifest::parse(wanted.manifest.as_deref().unwrap(), &path).unwrap();
            manifest
                .dirs
                .into_iter()
                .map(|d| d.host)
                .collect::<Vec<_>>()
        };
        assert_eq!(
            host("echo"),
            [
                dir.path().join("manifests").join("data"),
                std::path::PathBuf::from("/srv/x")
            ]
        );
        assert_eq!(host("inline"), [dir.path().join("notes")]);
    }

    #[test]
    fn bad_names_references_and_manifests_are_refused() {
        let path = Path::new("components.toml");
        for (text, expected) in [
            ("[\"a/b\"]\nreference = \"r.example/x:1\"", "may hold only"),
            ("[a]\nreference = \"r.example/not a name:1\"", "reference"),
            (
                "[a]\nreference = \"r.example/x:1\"\n[a.manifest]\nnope = 1",
                "a.manifest",
            ),
            (
                "[a]\nreference = \"r.example/x:1\"\nother = 1",
                "unknown field",
            ),
        ] {
            let err = format!("{:#}", Components::parse(text, path).unwrap_err());
            assert!(err.contains(expected), "{text}: {err}");
        }
    }
}
