//! The guest SDK this binary carries: the packaged files of `airlock-guest`
//! at the binary's own version (listed by `build.rs`), which `airlock new`
//! writes into each crate it creates, in [`DIR`], so that the crate builds
//! with nothing but a Rust toolchain: no registry, no checkout.

use std::path::Path;

use anyhow::{Context as _, bail};

/// Where in a new crate the SDK is written, and what its dependency names.
pub const DIR: &str = "vendor/airlock-guest";

/// The SDK's files, by their path in its crate.
const FILES: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/guest_sdk.rs"));

/// The workspace manifest the SDK's manifest inherits values from.
const WORKSPACE_MANIFEST: &str = include_str!("../../../Cargo.toml");

/// Writes the SDK crate into `crate_dir`/[`DIR`], its manifest standalone.
pub fn write(crate_dir: &Path) -> anyhow::Result<()> {
    let sdk = crate_dir.join(DIR);
    for (path, text) in FILES {
        let text = if *path == "Cargo.toml" {
            standalone_manifest(text, WORKSPACE_MANIFEST)?
        } else {
            (*text).to_owned()
        };
        super::write_file(&sdk.join(path), &text, false)?;
    }
    Ok(())
}

/// `manifest` with every value it inherits from `workspace` (`x.workspace =
/// true` in `[package]`, the dependency tables and `[lints]`) written in its
/// place, as `cargo package` does: a manifest that needs no workspace.
fn standalone_manifest(manifest: &str, workspace: &str) -> anyhow::Result<String> {
    let mut manifest: toml::Table = manifest.parse().context("the SDK's Cargo.toml")?;
    let workspace: toml::Table = workspace.parse().context("the workspace's Cargo.toml")?;
    let workspace = workspace
        .get("workspace")
        .and_then(toml::Value::as_table)
        .context("the workspace's Cargo.toml has no [workspace]")?;
    if let Some(package) = manifest
        .get_mut("package")
        .and_then(toml::Value::as_table_mut)
    {
        for (key, value) in package.iter_mut() {
            if inherits(value) {
                *value = inherited(workspace, "package", key)?.clone();
            }
        }
    }
    for section in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let Some(dependencies) = manifest
            .get_mut(section)
            .and_then(toml::Value::as_table_mut)
        else {
            continue;
        };
        for (name, dependency) in dependencies.iter_mut() {
            if inherits(dependency) {
                *dependency = inherited_dependency(workspace, name, dependency)?;
            }
        }
    }
    if manifest.get("lints").is_some_and(inherits) {
        let lints = workspace
            .get("lints")
            .context("[workspace.lints] is missing")?;
        manifest.insert("lints".into(), lints.clone());
    }
    Ok(toml::to_string(&manifest)?)
}

/// Whether `value` is `{ workspace = true, ... }`.
fn inherits(value: &toml::Value) -> bool {
    value.get("workspace").and_then(toml::Value::as_bool) == Some(true)
}

/// `[workspace.<table>] key`.
fn inherited<'a>(
    workspace: &'a toml::Table,
    table: &str,
    key: &str,
) -> anyhow::Result<&'a toml::Value> {
    workspace
        .get(table)
        .and_then(|t| t.get(key))
        .with_context(|| format!("`{key}` inherits from [workspace.{table}], which lacks it"))
}

/// The workspace's dependency `name`, with what `local` (its entry in the
/// SDK's manifest) adds: more features, `optional`.
fn inherited_dependency(
    workspace: &toml::Table,
    name: &str,
    local: &toml::Value,
) -> anyhow::Result<toml::Value> {
    let mut resolved = match inherited(workspace, "dependencies", name)? {
        toml::Value::String(version) => {
            toml::Table::from_iter([("version".to_owned(), version.clone().into())])
        }
        toml::Value::Table(table) => table.clone(),
        other => bail!("the workspace's dependency `{name}` is {other}"),
    };
    if resolved.contains_key("path") {
        bail!("the SDK's dependency `{name}` is a path in the workspace, which a new crate lacks");
    }
    for (key, value) in local.as_table().into_iter().flatten() {
        match key.as_str() {
            "workspace" => {}
            "features" => {
                let features = resolved
                    .entry("features")
                    .or_insert_with(|| toml::Value::Array(Vec::new()));
                if let (Some(features), Some(more)) = (features.as_array_mut(), value.as_array()) {
                    features.extend(more.iter().cloned());
                }
            }
            _ => {
                resolved.insert(key.clone(), value.clone());
            }
        }
    }
    Ok(toml::Value::Table(resolved))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sdk_manifest_stands_alone() {
        let (_, manifest) = FILES
            .iter()
            .find(|(path, _)| *path == "Cargo.toml")
            .unwrap();
        let text = standalone_manifest(manifest, WORKSPACE_MANIFEST).unwrap();
        assert!(!text.contains("workspace"), "{text}");
        let manifest: toml::Table = text.parse().unwrap();
        let package = &manifest["package"];
        assert_eq!(package["name"].as_str(), Some("airlock-guest"));
        assert_eq!(package["version"].as_str(), Some(env!("CARGO_PKG_VERSION")));
        assert!(package["edition"].is_str(), "{text}");
        let wit_bindgen = &manifest["dependencies"]["wit-bindgen"];
        assert!(wit_bindgen["version"].is_str(), "{text}");
        assert!(manifest["lints"]["rust"].is_table(), "{text}");
    }

    #[test]
    fn a_dependency_keeps_what_it_adds_to_the_workspace_s() {
        let workspace = r#"
            [workspace.package]
            edition = "2024"
            [workspace.dependencies]
            serde = { version = "1", features = ["derive"] }
            anyhow = "1"
        "#;
        let manifest = r#"
            [package]
            name = "x"
            edition.workspace = true
            [dependencies]
            serde = { workspace = true, features = ["rc"], optional = true }
            anyhow.workspace = true
        "#;
        let text = standalone_manifest(manifest, workspace).unwrap();
        let manifest: toml::Table = text.parse().unwrap();
        assert_eq!(manifest["package"]["edition"].as_str(), Some("2024"));
        let serde = &manifest["dependencies"]["serde"];
        assert_eq!(serde["version"].as_str(), Some("1"));
        assert_eq!(serde["optional"].as_bool(), Some(true));
        let features: Vec<_> = serde["features"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f.as_str().unwrap())
            .collect();
        assert_eq!(features, ["derive", "rc"]);
        assert_eq!(
            manifest["dependencies"]["anyhow"]["version"].as_str(),
            Some("1")
        );

        let error =
            standalone_manifest("[package]\nlicense.workspace = true", workspace).unwrap_err();
        assert!(format!("{error:#}").contains("`license`"), "{error:#}");
    }

    #[test]
    fn carries_the_sources_and_the_wit() {
        for path in [
            "src/lib.rs",
            "src/bindings.rs",
            "wit/worlds.wit",
            "README.md",
        ] {
            assert!(FILES.iter().any(|(p, _)| *p == path), "{path}");
        }
    }
}
