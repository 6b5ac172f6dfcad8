//! The files of the components pulled by reference, shared between the
//! registry's sources and what stages them again when a tag moves.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The pulled components' files, in the order they are loaded. Clones share
/// one list: replacing a file in one is seen by every reader, so the tools
/// directory's watcher sees a re-staged component as a changed file and the
/// registry reloads it like one.
#[derive(Debug, Clone, Default)]
pub struct PulledFiles(Arc<RwLock<Vec<PathBuf>>>);

impl PulledFiles {
    /// A list of `files`.
    pub fn new(files: Vec<PathBuf>) -> PulledFiles {
        PulledFiles(Arc::new(RwLock::new(files)))
    }

    /// The files now.
    pub fn files(&self) -> Vec<PathBuf> {
        self.0.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Puts `new` in the place of `old` (appends it if `old` is not listed).
    pub fn replace(&self, old: &Path, new: PathBuf) {
        let mut files = self.0.write().unwrap_or_else(|e| e.into_inner());
        match files.iter_mut().find(|file| *file == old) {
            Some(file) => *file = new,
            None => files.push(new),
        }
    }
}

impl PartialEq for PulledFiles {
    fn eq(&self, other: &PulledFiles) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.files() == other.files()
    }
}

impl Eq for PulledFiles {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_file_is_seen_by_every_clone() {
        let files = PulledFiles::new(vec!["a/x.wasm".into(), "a/y.wasm".into()]);
        let seen = files.clone();
        files.replace(Path::new("a/x.wasm"), "b/x.wasm".into());
        assert_eq!(
            seen.files(),
            [PathBuf::from("b/x.wasm"), PathBuf::from("a/y.wasm")]
        );
        files.replace(Path::new("missing.wasm"), "c/z.wasm".into());
        assert_eq!(seen.files().len(), 3);
    }
}
