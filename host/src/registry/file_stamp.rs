//! What identifies one version of a file without reading it, for the
//! reload stamps of components, manifests and skills.

use std::path::Path;

/// What identifies one version of a file without reading it: its size,
/// modification time and (on Unix) inode. Replacing a file, in place or by
/// renaming another over it, changes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileStamp {
    len: u64,
    modified: Option<std::time::SystemTime>,
    inode: u64,
}

impl FileStamp {
    /// The stamp of the file at `path` now.
    pub(crate) fn of(path: &Path) -> std::io::Result<FileStamp> {
        Ok(FileStamp::from_metadata(&std::fs::metadata(path)?))
    }

    /// The stamp of the entry at `path` now, a link itself rather than
    /// what it names.
    pub(crate) fn of_entry(path: &Path) -> std::io::Result<FileStamp> {
        Ok(FileStamp::from_metadata(&std::fs::symlink_metadata(path)?))
    }

    fn from_metadata(meta: &std::fs::Metadata) -> FileStamp {
        #[cfg(unix)]
        let inode = std::os::unix::fs::MetadataExt::ino(meta);
        #[cfg(not(unix))]
        let inode = 0;
        FileStamp {
            len: meta.len(),
            modified: meta.modified().ok(),
            inode,
        }
    }
}
