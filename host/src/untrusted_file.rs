//! Reading a file that whoever may write the tools directory controls (a
//! component, a manifest): opened without blocking, refused unless it is a
//! regular file, and never read past a bound.
//!
//! A plain `open` of a FIFO waits for a writer, and forever if none comes;
//! a device or a huge (or sparse) file is read whole by `read_to_end`. So
//! the file is opened with `O_NONBLOCK` (which a FIFO, a device or a socket
//! honours and a regular file ignores), its kind and size are read from the
//! open descriptor (`fstat`, so they are those of what was opened, not of
//! what the path names a moment later), and reading stops at the bound even
//! if the file grows meanwhile.

use std::fs::File;
use std::io::Read as _;
use std::path::Path;

use crate::units::format_size;

/// A regular file, open for reading.
#[derive(Debug)]
pub struct RegularFile {
    file: File,
    len: u64,
}

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// It cannot be opened (missing, not permitted...).
    #[error("cannot open it: {0}")]
    Open(#[source] std::io::Error),
    /// It is not a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// It is larger than the bound.
    #[error("it is {} ({len} bytes), larger than the limit of {}", crate::units::format_size_approx(*len), format_size(*limit))]
    TooLarge {
        /// Its size in bytes (at least), when it was refused.
        len: u64,
        /// The bound.
        limit: u64,
    },
    /// Reading it failed.
    #[error("cannot read it: {0}")]
    Read(#[source] std::io::Error),
}

impl FileError {
    /// Whether the file does not exist.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Open(err) if err.kind() == std::io::ErrorKind::NotFound)
    }
}

impl RegularFile {
    /// Opens `path` (following links) without waiting on it and without
    /// making it a controlling terminal; refuses anything but a regular
    /// file.
    pub fn open(path: &Path) -> Result<RegularFile, FileError> {
        use rustix::fs::{FileType, Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
        let fd = rustix::fs::open(path, flags, Mode::empty())
            .map_err(|err| FileError::Open(err.into()))?;
        let stat = rustix::fs::fstat(&fd).map_err(|err| FileError::Open(err.into()))?;
        let kind = match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => None,
            FileType::Fifo => Some("a FIFO"),
            FileType::CharacterDevice => Some("a character device"),
            FileType::BlockDevice => Some("a block device"),
            FileType::Socket => Some("a socket"),
            FileType::Directory => Some("a directory"),
            FileType::Symlink | FileType::Unknown => Some("an unknown kind of file"),
        };
        if let Some(kind) = kind {
            return Err(FileError::NotRegular(kind));
        }
        Ok(RegularFile {
            file: File::from(fd),
            len: u64::try_from(stat.st_size).unwrap_or(0),
        })
    }

    /// Its size when it was opened, in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether it was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Refuses the file if it is larger than `limit` bytes.
    pub fn check_len(&self, limit: u64) -> Result<(), FileError> {
        if self.len > limit {
            return Err(FileError::TooLarge {
                len: self.len,
                limit,
            });
        }
        Ok(())
    }

    /// Appends what is left of the file to `out`, until `out` holds
    /// `limit` bytes at most: a file that grew past it since it was opened
    /// is refused, having read no more than one byte beyond.
    pub fn read_rest(&mut self, out: &mut Vec<u8>, limit: u64) -> Result<(), FileError> {
        let room = limit.saturating_sub(out.len() as u64);
        out.reserve(
            usize::try_from(self.len.min(limit))
                .unwrap_or(0)
                .saturating_sub(out.len()),
        );
        (&mut self.file)
            .take(room.saturating_add(1))
            .read_to_end(out)
            .map_err(FileError::Read)?;
        if out.len() as u64 > limit {
            return Err(FileError::TooLarge {
                len: out.len() as u64,
                limit,
            });
        }
        Ok(())
    }

    /// Reads up to `n` bytes from where the file is, fewer only at its end.
    pub fn read_head(&mut self, n: usize) -> Result<Vec<u8>, FileError> {
        let mut head = Vec::with_capacity(n);
        (&mut self.file)
            .take(n as u64)
            .read_to_end(&mut head)
            .map_err(FileError::Read)?;
        Ok(head)
    }
}

/// The whole regular file at `path`, if it holds at most `limit` bytes.
pub fn read(path: &Path, limit: u64) -> Result<Vec<u8>, FileError> {
    let mut file = RegularFile::open(path)?;
    file.check_len(limit)?;
    let mut out = Vec::new();
    file.read_rest(&mut out, limit)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("x.toml");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::RUSR).unwrap();
        // Without a writer, a blocking open would never return.
        let err = read(&fifo, 1024).unwrap_err();
        assert!(matches!(err, FileError::NotRegular("a FIFO")), "{err}");
        assert_eq!(err.to_string(), "it is a FIFO, not a regular file");
    }

    #[test]
    fn devices_and_directories_are_refused() {
        let err = read(Path::new("/dev/zero"), 1024).unwrap_err();
        assert!(
            matches!(err, FileError::NotRegular("a character device")),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let err = read(dir.path(), 1024).unwrap_err();
        assert!(matches!(err, FileError::NotRegular("a directory")), "{err}");
        let err = read(&dir.path().join("missing"), 1024).unwrap_err();
        assert!(err.is_not_found(), "{err}");
    }

    #[test]
    fn a_large_sparse_file_is_refused_by_its_size_unread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("big.wasm");
        File::create(&path).unwrap().set_len(1 << 40).unwrap();
        let err = read(&path, 1 << 20).unwrap_err();
        assert!(
            matches!(err, FileError::TooLarge { len, limit } if len == 1 << 40 && limit == 1 << 20),
            "{err}"
        );
        assert!(
            err.to_string().contains("larger than the limit of 1MiB"),
            "{err}"
        );
    }

    #[test]
    fn reading_stops_at_the_limit_when_the_file_grows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("grows");
        std::fs::write(&path, b"12345678").unwrap();
        assert_eq!(read(&path, 8).unwrap(), b"12345678");
        let mut file = RegularFile::open(&path).unwrap();
        file.check_len(10).unwrap();
        // It grows after it was opened.
        std::fs::write(&path, vec![b'x'; 100]).unwrap();
        let mut out = file.read_head(2).unwrap();
        assert_eq!(out, b"xx");
        let err = file.read_rest(&mut out, 10).unwrap_err();
        assert!(
            matches!(err, FileError::TooLarge { len: 11, limit: 10 }),
            "{err}"
        );
        assert_eq!(out.len(), 11, "one byte past the limit, no more");
    }
}
