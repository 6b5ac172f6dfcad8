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
}

impl Store {
    /// Opens (creating it if needed) the cache in `dir`.
    pub(super) fn open(dir: &Path) -> anyhow::Result<Store> {
        std::fs::create_dir_all(dir.join("blobs").join("sha256"))
            .with_context(|| format!("cannot create the pull cache {}", dir.display()))?;
        Ok(Store {
            dir: dir.to_owned(),
        })
    }

    /// The path of the blob of `digest` (`sha256:<hex>`, checked).
    pub(super) fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = sha256_hex(digest)?;
        Some(self.dir.join("blobs").join("sha256").join(hex))
    }

    /// The blob of `digest`, if the cache holds it and it still has that
    /// digest and at most `limit` bytes (a blob that does not is removed).
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
            tracing::warn!(digest, file = %path.display(), "a cached blob does not have its digest: removed");
            let _ = std::fs::remove_file(&path);
            None
        }
    }

    /// Keeps `bytes`, whose digest is `digest` (checked by the caller).
    pub(super) fn write(&self, digest: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let path = self
            .blob_path(digest)
            .context("a blob's digest is not sha256")?;
        write_atomically(&path, bytes)
    }

    /// The signature manifest of the manifest `digest`, if kept and at most
    /// `limit` bytes. It needs no digest of its own: what it holds is
    /// checked by its signatures.
    pub(super) fn read_signature(&self, digest: &str, limit: u64) -> Option<Vec<u8>> {
        let path = self.signature_path(digest)?;
        if std::fs::metadata(&path).ok()?.len() > limit {
            return None;
        }
        std::fs::read(path).ok()
    }

    /// Keeps the signature manifest of the manifest `digest`.
    pub(super) fn write_signature(&self, digest: &str, manifest: &[u8]) -> anyhow::Result<()> {
        let path = self
            .signature_path(digest)
            .context("a manifest's digest is not sha256")?;
        std::fs::create_dir_all(self.dir.join("signatures"))
            .with_context(|| format!("cannot create {}", self.dir.join("signatures").display()))?;
        write_atomically(&path, manifest)
    }

    fn signature_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = sha256_hex(digest)?;
        Some(
            self.dir
                .join("signatures")
                .join(format!("sha256-{hex}.sig")),
        )
    }

    /// The digests of the Sigstore bundles kept for the manifest `digest`,
    /// if its referrers were fetched. Each bundle is a blob, checked by
    /// its digest when read.
    pub(super) fn read_bundles(&self, digest: &str) -> Option<Vec<String>> {
        let text = std::fs::read(self.bundles_path(digest)?).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// Keeps the digests of the Sigstore bundles of the manifest `digest`.
    pub(super) fn write_bundles(&self, digest: &str, bundles: &[String]) -> anyhow::Result<()> {
        let path = self
            .bundles_path(digest)
            .context("a manifest's digest is not sha256")?;
        let dir = self.dir.join("referrers");
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        write_atomically(&path, &serde_json::to_vec(bundles)?)
    }

    fn bundles_path(&self, digest: &str) -> Option<PathBuf> {
        let hex = sha256_hex(digest)?;
        Some(
            self.dir
                .join("referrers")
                .join(format!("sha256-{hex}.json")),
        )
    }

    /// Stages the pulled component `wanted` for loading; returns the path
    /// of its component file.
    pub(super) fn stage(&self, wanted: &Wanted, pulled: &Pulled) -> anyhow::Result<PathBuf> {
        let hex = sha256_hex(&pulled.digest).context("a manifest's digest is not sha256")?;
        let dir = self.dir.join("served").join(format!("sha256-{hex}"));
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
