//! The cache of pulled blobs, by digest, and the staged components the
//! registry loads.
//!
//! `blobs/sha256/<hex>` holds a manifest or a component, written only after
//! its digest was checked, and checked again whenever it is read.
//! `signatures/sha256-<manifest hex>.sig` is the cosign signature manifest
//! of a manifest. `referrers/sha256-<manifest hex>.json` lists the
//! digests of the Sigstore bundles (blobs) attached to a manifest.
//! `served/sha256-<manifest hex>/NAME.wasm` is a component
//! staged for loading under its name, with its manifest `NAME.toml` beside
//! it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use super::components::Wanted;
use super::digest::{sha256_hex, sha256_of};

/// A component pulled (or taken from the cache), its digests checked.
#[derive(Debug)]
pub(super) struct Pulled {
    /// The digest of its manifest: what it is locked at and served as.
    pub(super) digest: String,
    /// The component.
    pub(super) wasm: Vec<u8>,
    /// Whether the cache held it all (the registry was not asked).
    pub(super) from_cache: bool,
}

/// The cache directory.
#[derive(Debug, Clone)]
pub(super) struct Store {
    dir: PathBuf,
    /// Where what is pulled and staged goes instead, leaving `dir` as it
    /// is (`serve --check`); read before `dir`.
    scratch: Option<PathBuf>,
}

impl Store {
    /// Opens (creating it if needed) the cache in `dir`.
    pub(super) fn open(dir: &Path) -> anyhow::Result<Store> {
        create_blobs_dir(dir)?;
        Ok(Store {
            dir: dir.to_owned(),
            scratch: None,
        })
    }

    /// The cache in `dir`, read only: what is pulled and staged is written
    /// in `scratch`, and nothing in `dir` is created, changed or removed.
    pub(super) fn read_only(dir: &Path, scratch: &Path) -> anyhow::Result<Store> {
        create_blobs_dir(scratch)?;
        Ok(Store {
            dir: dir.to_owned(),
            scratch: Some(scratch.to_owned()),
        })
    }

    /// Where the store writes.
    fn root(&self) -> &Path {
        self.scratch.as_deref().unwrap_or(&self.dir)
    }

    /// `relative` in the store, where it is (the scratch directory first).
    fn find(&self, relative: &Path) -> Option<PathBuf> {
        self.scratch
            .iter()
            .chain([&self.dir])
            .map(|root| root.join(relative))
            .find(|path| path.is_file())
    }

    /// The path of the blob of `digest` (`sha256:<hex>`, checked), if the
    /// store holds it.
    pub(super) fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        self.find(&blob_relative(digest)?)
    }

    /// The blob of `digest`, if the cache holds it and it still has that
    /// digest and at most `limit` bytes (a blob that does not is removed,
    /// unless it is in the read-only cache).
    pub(super) fn read(&self, digest: &str, limit: u64) -> Option<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let len = std::fs::metadata(&path).ok()?.len();
        if len > limit {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        if sha256_of(&bytes) == digest {
            Some(bytes)
        } else {
            tracing::warn!(digest, file = %path.display(), "a cached blob does not have its digest: not used");
            if path.starts_with(self.root()) {
                let _ = std::fs::remove_file(&path);
            }
            None
        }
    }

    /// Keeps `bytes`, whose digest is `digest` (checked by the caller).
    pub(super) fn write(&self, digest: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let relative = blob_relative(digest).context("a blob's digest is not sha256")?;
        write_atomically(&self.root().join(relative), bytes)
    }

    /// The signature manifest of the manifest `digest`, if kept and at most
    /// `limit` bytes. It needs no digest of its own: what it holds is
    /// checked by its signatures.
    pub(super) fn read_signature(&self, digest: &str, limit: u64) -> Option<Vec<u8>> {
        let path = self.find(&signature_relative(digest)?)?;
        if std::fs::metadata(&path).ok()?.len() > limit {
            return None;
        }
        std::fs::read(path).ok()
    }

    /// Keeps the signature manifest of the manifest `digest`.
    pub(super) fn write_signature(&self, digest: &str, manifest: &[u8]) -> anyhow::Result<()> {
        let relative = signature_relative(digest).context("a manifest's digest is not sha256")?;
        let dir = self.root().join("signatures");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomically(&self.root().join(relative), manifest)
    }

    /// The digests of the Sigstore bundles kept for the manifest `digest`,
    /// if its referrers were fetched. Each bundle is a blob, checked by
    /// its digest when read.
    pub(super) fn read_bundles(&self, digest: &str) -> Option<Vec<String>> {
        let text = std::fs::read(self.find(&bundles_relative(digest)?)?).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Keeps the digests of the Sigstore bundles of the manifest `digest`.
    pub(super) fn write_bundles(&self, digest: &str, bundles: &[String]) -> anyhow::Result<()> {
        let relative = bundles_relative(digest).context("a manifest's digest is not sha256")?;
        let dir = self.root().join("referrers");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomically(&self.root().join(relative), &serde_json::to_vec(bundles)?)
    }

    /// Stages the pulled component `wanted` for loading; returns the path
    /// of its component file.
    pub(super) fn stage(&self, wanted: &Wanted, pulled: &Pulled) -> anyhow::Result<PathBuf> {
        let hex = sha256_hex(&pulled.digest).context("a manifest's digest is not sha256")?;
        let dir = self.root().join("served").join(format!("sha256-{hex}"));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let component = dir.join(format!("{}.wasm", wanted.name));
        write_atomically(&component, &pulled.wasm)?;
        let manifest = component.with_extension("toml");
        match &wanted.manifest {
            Some(text) => write_atomically(&manifest, text.as_bytes())?,
            None => match std::fs::remove_file(&manifest) {
                Ok(()) => {}
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("cannot remove {}", manifest.display()));
                }
            },
        }
        Ok(component)
    }
}

/// Creates `dir/blobs/sha256`.
fn create_blobs_dir(dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir.join("blobs").join("sha256"))
        .with_context(|| format!("cannot create the pull cache {}", dir.display()))
}

/// Where the blob of `digest` is kept, under the store's directory.
fn blob_relative(digest: &str) -> Option<PathBuf> {
    Some(Path::new("blobs").join("sha256").join(sha256_hex(digest)?))
}

/// Where the signature manifest of the manifest `digest` is kept.
fn signature_relative(digest: &str) -> Option<PathBuf> {
    Some(Path::new("signatures").join(format!("sha256-{}.sig", sha256_hex(digest)?)))
}

/// Where the bundle digests of the manifest `digest` are kept.
fn bundles_relative(digest: &str) -> Option<PathBuf> {
    Some(Path::new("referrers").join(format!("sha256-{}.json", sha256_hex(digest)?)))
}

/// Writes `bytes` to `path` through a temporary file renamed into place.
pub(super) fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}.tmp", std::process::id()));
    let temporary = PathBuf::from(temporary);
    std::fs::write(&temporary, bytes)
        .and_then(|()| std::fs::rename(&temporary, path))
        .with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_is_read_back_only_while_it_has_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let digest = sha256_of(b"component");
        assert!(store.read(&digest, 1 << 20).is_none(), "not kept yet");
        store.write(&digest, b"component").unwrap();
        assert_eq!(store.read(&digest, 1 << 20).unwrap(), b"component");
        assert!(store.read(&digest, 4).is_none(), "larger than the limit");
        let path = store.blob_path(&digest).unwrap();
        std::fs::write(&path, b"tampered!").unwrap();
        assert!(
            store.read(&digest, 1 << 20).is_none(),
            "no longer its digest"
        );
        assert!(!path.exists(), "a blob without its digest is removed");
    }

    #[test]
    fn a_component_is_staged_by_digest_with_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let pulled = Pulled {
            digest: sha256_of(b"manifest"),
            wasm: b"component".to_vec(),
            from_cache: false,
        };
        let mut wanted = Wanted {
            name: "echo".into(),
            reference: "127.0.0.1:5000/tools/echo:1".try_into().unwrap(),
            manifest: Some("[limits]\n".into()),
            unsigned: false,
        };
        let path = store.stage(&wanted, &pulled).unwrap();
        let hex = sha256_hex(&pulled.digest).unwrap();
        assert!(path.ends_with(format!("served/sha256-{hex}/echo.wasm")));
        assert_eq!(std::fs::read(&path).unwrap(), b"component");
        assert_eq!(
            std::fs::read_to_string(path.with_extension("toml")).unwrap(),
            "[limits]\n"
        );
        wanted.manifest = None;
        store.stage(&wanted, &pulled).unwrap();
        assert!(
            !path.with_extension("toml").exists(),
            "no manifest: none beside it"
        );
    }
}
