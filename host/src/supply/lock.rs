//! The lock file `airlock pull` writes: the digest each component of the
//! components file resolved to, so that every host started with it serves
//! the same bytes whatever a tag does meanwhile.
//!
//! ```toml
//! [echo]
//! reference = "registry.example.com/tools/echo:1.2"
//! digest = "sha256:…"
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};

use super::components::Wanted;

/// The digests of a components file's references, by component name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lock(BTreeMap<String, Locked>);

/// One component's entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locked {
    /// The reference as the components file gave it.
    pub reference: String,
    /// The digest of its manifest (`sha256:<hex>`).
    pub digest: String,
}

/// What a lock file starts with.
const HEADER: &str =
    "# Written by `airlock pull`: the manifest digest each component is served at.\n";

impl Lock {
    /// Reads the lock file at `path`.
    pub fn read(path: &Path) -> anyhow::Result<Lock> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the lock file {}", path.display()))?;
        let lock: Lock =
            toml::from_str(&text).with_context(|| format!("lock file {}", path.display()))?;
        for (name, locked) in &lock.0 {
            if super::digest::sha256_hex(&locked.digest).is_none() {
                bail!(
                    "lock file {}: [{name}] digest = {:?} is not `sha256:` and 64 hex digits",
                    path.display(),
                    locked.digest
                );
            }
        }
        Ok(lock)
    }

    /// The digest `wanted` is locked at. Fails if it is not in the lock, or
    /// the lock was written for another reference.
    pub fn digest_of(&self, wanted: &Wanted) -> anyhow::Result<String> {
        let reference = wanted.reference.to_string();
        match self.0.get(&wanted.name) {
            Some(locked) if locked.reference == reference => Ok(locked.digest.clone()),
            Some(locked) => bail!(
                "component `{}`: the lock was written for {}, the components file names {reference}: run `airlock pull` again",
                wanted.name,
                locked.reference
            ),
            None => bail!(
                "component `{}` ({reference}) is not in the lock: run `airlock pull` again",
                wanted.name
            ),
        }
    }

    /// Records that `wanted` resolved to `digest`.
    pub fn insert(&mut self, wanted: &Wanted, digest: String) {
        let reference = wanted.reference.to_string();
        self.0
            .insert(wanted.name.clone(), Locked { reference, digest });
    }

    /// Writes the lock to `path` (through a temporary file renamed into
    /// place, so a reader never sees half of it).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let text = format!("{HEADER}{}", toml::to_string(self)?);
        super::store::write_atomically(path, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_lock_reads_back_and_pins_its_references() {
        let dir = tempfile::tempdir().unwrap();
        let wanted = Wanted {
            name: "echo".into(),
            reference: "127.0.0.1:5000/tools/echo:1".try_into().unwrap(),
            manifest: None,
            unsigned: false,
        };
        let digest = format!("sha256:{}", "ab".repeat(32));
        let mut lock = Lock::default();
        lock.insert(&wanted, digest.clone());
        let path = dir.path().join("airlock.lock");
        lock.write(&path).unwrap();
        let read = Lock::read(&path).unwrap();
        assert_eq!(read, lock);
        assert_eq!(read.digest_of(&wanted).unwrap(), digest);
        let moved = Wanted {
            reference: "127.0.0.1:5000/tools/echo:2".try_into().unwrap(),
            ..wanted.clone()
        };
        assert!(format!("{}", read.digest_of(&moved).unwrap_err()).contains("pull"));
        let other = Wanted {
            name: "other".into(),
            ..wanted
        };
        assert!(format!("{}", read.digest_of(&other).unwrap_err()).contains("not in the lock"));
    }

    #[test]
    fn a_digest_that_is_not_sha256_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airlock.lock");
        std::fs::write(
            &path,
            "[a]\nreference = \"r.example/a:1\"\ndigest = \"md5:00\"\n",
        )
        .unwrap();
        assert!(format!("{:#}", Lock::read(&path).unwrap_err()).contains("64 hex"));
    }
}
