//! Granted directories: resolved once, when the component loads, and held
//! open from then on.
//!
//! A grant is the directory its path named at load, whatever happens to the
//! path afterwards. Resolving walks the path one component at a time,
//! following symbolic links by hand and recording every place it passes
//! through; the directory it ends at is opened (without following a final
//! link) and checked to be the very one the walk saw. Every call then gets
//! that open directory, reopened through the process's own descriptor
//! table (`/proc/self/fd/N`), never the path: renaming the directory,
//! replacing it with a symbolic link or deleting it cannot make a later call
//! see anything else.
//!
//! Holding the directory makes a running server safe; resolving happens
//! again when a component (or its manifest) is replaced. So a grant must not
//! depend on a place a guest can write: [`check_nesting`] refuses a grant
//! whose path passes through, or ends inside, a read-write grant (of the
//! same component or of another one), and [`ProtectedPaths`] keeps
//! Airlock's own files out of every grant. Whatever a manifest says, no
//! grant is, contains or lies inside a place that exposes the host itself
//! (the root, `/proc`, `/sys`, `/dev`: see `policy/pseudo_fs`).

use std::fs::File;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component as PathPart, Path, PathBuf};
use std::sync::Arc;

use super::manifest::DirMode;

/// Most symbolic links one grant's path may go through (as the kernel's
/// `MAXSYMLINKS`): more is a loop.
const MAX_SYMLINKS: usize = 40;

/// One granted directory, held open.
#[derive(Clone)]
pub struct GrantedDir {
    /// The directory's canonical path when it was granted (for messages and
    /// the nesting rule; calls never open it).
    pub host: PathBuf,
    /// Where the guest sees it.
    pub guest: String,
    /// Read-only or read-write.
    pub mode: DirMode,
    /// Every place the path went through when it was resolved: each
    /// directory and each symbolic link on the way, and the directory
    /// itself last.
    traversed: Vec<PathBuf>,
    /// The directory itself, kept open for as long as the grant lives
    /// (`reopen` names it).
    _held: Arc<File>,
    /// The path that reopens the held directory (its entry in
    /// `/proc/self/fd`).
    reopen: PathBuf,
}

impl std::fmt::Debug for GrantedDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GrantedDir")
            .field("host", &self.host)
            .field("guest", &self.guest)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl GrantedDir {
    /// Resolves `path` and holds the directory it names. The error says
    /// why, for a message that names the path.
    pub fn open(path: &Path, guest: &str, mode: DirMode) -> Result<GrantedDir, String> {
        let (host, traversed, seen) =
            resolve(path).map_err(|err| format!("cannot be granted: {err}"))?;
        super::pseudo_fs::check(&host).map_err(|why| format!("cannot be granted: it {why}"))?;
        let held = open_no_follow(&host).map_err(|err| {
            format!(
                "resolves to {}, which cannot be opened: {err}",
                host.display()
            )
        })?;
        let meta = held.metadata().map_err(|err| {
            format!(
                "resolves to {}, which cannot be opened: {err}",
                host.display()
            )
        })?;
        if (meta.dev(), meta.ino()) != seen {
            return Err(format!(
                "resolves to {}, which changed while it was being granted; try again",
                host.display()
            ));
        }
        let reopen = PathBuf::from(format!("{DESCRIPTORS}/{}", raw_fd(&held)));
        let reopened = std::fs::metadata(&reopen).map_err(|err| {
            format!(
                "resolves to {}, which cannot be held open ({} is needed: {err})",
                host.display(),
                DESCRIPTORS
            )
        })?;
        if (reopened.dev(), reopened.ino()) != seen {
            return Err(format!(
                "resolves to {}, which cannot be held open ({DESCRIPTORS} does not name open directories)",
                host.display()
            ));
        }
        Ok(GrantedDir {
            host,
            guest: guest.to_owned(),
            mode,
            traversed,
            _held: Arc::new(held),
            reopen,
        })
    }

    /// The path every call opens to get this very directory (not its
    /// original path): valid while `self` lives.
    pub fn handle_path(&self) -> &Path {
        &self.reopen
    }

    /// Whether the guest may write here.
    fn writable(&self) -> bool {
        self.mode == DirMode::ReadWrite
    }
}

impl PartialEq for GrantedDir {
    /// The same directory (held handles compare by what they hold), guest
    /// path and mode.
    fn eq(&self, other: &GrantedDir) -> bool {
        self.host == other.host && self.guest == other.guest && self.mode == other.mode
    }
}

/// Where this process's open descriptors can be reopened by number.
#[cfg(target_os = "linux")]
const DESCRIPTORS: &str = "/proc/self/fd";
#[cfg(not(target_os = "linux"))]
const DESCRIPTORS: &str = "/dev/fd";

fn raw_fd(file: &File) -> i32 {
    std::os::fd::AsRawFd::as_raw_fd(file)
}

/// Opens the directory at `path` itself: a symbolic link in its place is
/// refused, not followed.
fn open_no_follow(path: &Path) -> std::io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
}

/// Walks `path` (made absolute against the working directory) one component
/// at a time, following symbolic links by hand. Returns the canonical
/// directory it names, every place the walk went through (each directory
/// and link, the result last), and the device and inode the walk found
/// there.
fn resolve(path: &Path) -> std::io::Result<(PathBuf, Vec<PathBuf>, (u64, u64))> {
    let absolute = std::path::absolute(path)?;
    let mut pending: Vec<PathBuf> = Vec::new();
    push_components(&mut pending, &absolute);
    let mut here = PathBuf::from("/");
    let mut traversed = vec![here.clone()];
    let mut links = 0;
    while let Some(part) = pending.pop() {
        let part = part.as_os_str();
        if part == ".." {
            here.pop();
            continue;
        }
        let next = here.join(part);
        traversed.push(next.clone());
        let meta = std::fs::symlink_metadata(&next)?;
        if meta.file_type().is_symlink() {
            links += 1;
            if links > MAX_SYMLINKS {
                return Err(std::io::Error::other("too many levels of symbolic links"));
            }
            let target = std::fs::read_link(&next)?;
            if target.is_absolute() {
                here = PathBuf::from("/");
            }
            push_components(&mut pending, &target);
        } else if meta.is_dir() {
            here = next;
        } else {
            return Err(std::io::Error::other(format!(
                "{} is not a directory",
                next.display()
            )));
        }
    }
    let meta = std::fs::symlink_metadata(&here)?;
    if !meta.is_dir() {
        return Err(std::io::Error::other("not a directory"));
    }
    if traversed.last() != Some(&here) {
        traversed.push(here.clone());
    }
    Ok((here, traversed, (meta.dev(), meta.ino())))
}

/// Pushes the components of `path` onto `stack` so that the first one is
/// popped first (`.` dropped, the root skipped).
fn push_components(stack: &mut Vec<PathBuf>, path: &Path) {
    let parts: Vec<PathBuf> = path
        .components()
        .filter_map(|part| match part {
            PathPart::Normal(name) => Some(PathBuf::from(name)),
            PathPart::ParentDir => Some(PathBuf::from("..")),
            PathPart::RootDir | PathPart::CurDir | PathPart::Prefix(_) => None,
        })
        .collect();
    stack.extend(parts.into_iter().rev());
}

/// Whether `inner` lies strictly inside `outer`.
fn strictly_inside(inner: &Path, outer: &Path) -> bool {
    inner != outer && inner.starts_with(outer)
}

/// Refuses a grant whose path passes through, or ends inside, a read-write
/// grant: whoever may write there (that component, or another one) could
/// rename what the path goes through and leave a symbolic link in its place,
/// and the next time the grant is resolved it would follow it. Two grants of
/// the very same directory are fine (neither can replace the other), and so
/// is a grant that contains a read-write one.
///
/// `grants` pairs each grant with what owns it (a manifest path), for the
/// message.
pub fn check_nesting<'a>(
    grants: impl IntoIterator<Item = (&'a Path, &'a GrantedDir)> + Clone,
) -> Result<(), String> {
    for (writer, outer) in grants.clone().into_iter().filter(|(_, g)| g.writable()) {
        for (owner, grant) in grants.clone() {
            if std::ptr::eq(grant, outer) {
                continue;
            }
            if let Some(through) = grant
                .traversed
                .iter()
                .find(|place| strictly_inside(place, &outer.host))
            {
                return Err(format!(
                    "the grant of {} (guest {}) in {} goes through {}, inside the read-write grant of {} in {}: \
                     a component that can write there could replace it with a symbolic link; \
                     grant directories that are not inside a read-write grant",
                    grant.host.display(),
                    grant.guest,
                    owner.display(),
                    through.display(),
                    outer.host.display(),
                    writer.display(),
                ));
            }
        }
    }
    Ok(())
}

/// Airlock's own files, which no grant may expose: the tools directory and
/// the compile cache must not be writable by a guest (it could add
/// components, manifests or compiled code), and the files holding keys,
/// tokens and secrets must not be reachable at all.
#[derive(Debug, Clone, Default)]
pub struct ProtectedPaths {
    /// Directories no grant may let a guest write into.
    pub no_write: Vec<PathBuf>,
    /// Files no grant may let a guest read.
    pub no_access: Vec<PathBuf>,
}

impl ProtectedPaths {
    /// Adds a directory guests must not write into (ignored if it does not
    /// exist yet: it is then created by Airlock, outside every grant made
    /// before).
    pub fn no_write(mut self, dir: &Path) -> Self {
        if let Ok(dir) = dir.canonicalize() {
            self.no_write.push(dir);
        }
        self
    }

    /// Adds a file guests must not read (ignored if it does not exist).
    pub fn no_access(mut self, file: &Path) -> Self {
        if let Ok(file) = file.canonicalize() {
            self.no_access.push(file);
        }
        self
    }

    /// Refuses `grant` if it exposes one of these paths.
    pub fn check(&self, grant: &GrantedDir) -> Result<(), String> {
        let exposed = |path: &PathBuf| path.starts_with(&grant.host);
        if grant.writable()
            && let Some(dir) = self.no_write.iter().find(|dir| exposed(dir))
        {
            return Err(format!(
                "the read-write grant of {} contains {}, which Airlock loads code from",
                grant.host.display(),
                dir.display()
            ));
        }
        if let Some(file) = self.no_access.iter().find(|file| exposed(file)) {
            return Err(format!(
                "the grant of {} contains {}, which holds Airlock's keys, tokens or secrets",
                grant.host.display(),
                file.display()
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grant(path: &Path, guest: &str, mode: DirMode) -> GrantedDir {
        GrantedDir::open(path, guest, mode).unwrap()
    }

    #[test]
    fn the_held_directory_survives_a_swap_of_its_path() {
        let root = tempfile::tempdir().unwrap();
        let data = root.path().join("data");
        std::fs::create_dir(&data).unwrap();
        std::fs::write(data.join("inside.txt"), "granted").unwrap();
        let granted = grant(&data, "/data", DirMode::ReadOnly);
        // Swap: the path now names a link to the root of the file system.
        std::fs::rename(&data, root.path().join("moved")).unwrap();
        std::os::unix::fs::symlink("/", &data).unwrap();
        let seen = std::fs::read_to_string(granted.handle_path().join("inside.txt")).unwrap();
        assert_eq!(seen, "granted");
        assert!(!granted.handle_path().join("etc").exists());
    }

    #[test]
    fn links_are_followed_and_every_place_is_recorded() {
        let root = tempfile::tempdir().unwrap();
        let real = root.path().join("real");
        std::fs::create_dir_all(real.join("sub")).unwrap();
        std::os::unix::fs::symlink("real/sub", root.path().join("link")).unwrap();
        let granted = grant(&root.path().join("link/../sub"), "/g", DirMode::ReadOnly);
        let canonical_root = root.path().canonicalize().unwrap();
        assert_eq!(granted.host, canonical_root.join("real/sub"));
        assert!(granted.traversed.contains(&canonical_root.join("link")));
        assert!(granted.traversed.contains(&canonical_root.join("real/sub")));
    }

    #[test]
    fn files_loops_and_missing_paths_are_refused() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("file"), "").unwrap();
        std::os::unix::fs::symlink("loop", root.path().join("loop")).unwrap();
        for bad in ["file", "loop", "missing"] {
            let err =
                GrantedDir::open(&root.path().join(bad), "/g", DirMode::ReadOnly).unwrap_err();
            assert!(err.contains("cannot be granted"), "{bad}: {err}");
        }
    }

    #[test]
    fn nothing_may_go_through_a_writable_grant() {
        let root = tempfile::tempdir().unwrap();
        let outer = root.path().join("outer");
        std::fs::create_dir_all(outer.join("inner")).unwrap();
        std::fs::create_dir(root.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(outer.join("inner"), root.path().join("via")).unwrap();
        let a = Path::new("a.toml");
        let b = Path::new("b.toml");
        let rw = grant(&outer, "/o", DirMode::ReadWrite);
        let ro = grant(&outer, "/o", DirMode::ReadOnly);
        let inner = grant(&outer.join("inner"), "/i", DirMode::ReadOnly);
        let via = grant(&root.path().join("via"), "/v", DirMode::ReadOnly);
        let elsewhere = grant(&root.path().join("elsewhere"), "/e", DirMode::ReadWrite);
        let err = check_nesting([(a, &rw), (a, &inner)]).unwrap_err();
        assert!(err.contains("inside the read-write grant"), "{err}");
        assert!(
            check_nesting([(a, &rw), (b, &via)]).is_err(),
            "through a link"
        );
        assert!(
            check_nesting([(a, &inner), (b, &ro)]).is_ok(),
            "read-only nests"
        );
        assert!(
            check_nesting([(a, &rw), (b, &rw.clone())]).is_ok(),
            "same dir"
        );
        assert!(
            check_nesting([(a, &inner), (b, &elsewhere), (b, &ro)]).is_ok(),
            "apart"
        );
    }

    #[test]
    fn the_host_itself_is_never_granted_however_it_is_spelled() {
        let root = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink("/proc", root.path().join("to-proc")).unwrap();
        std::os::unix::fs::symlink("/", root.path().join("to-root")).unwrap();
        let depth = root.path().canonicalize().unwrap().components().count();
        let up = vec![".."; depth + 1].join("/");
        std::os::unix::fs::symlink(&up, root.path().join("up")).unwrap();
        let in_temp = |name: &str| root.path().join(name).display().to_string();
        let spellings = [
            "/".to_owned(),
            "/proc".to_owned(),
            "/proc/".to_owned(),
            "/proc/../proc".to_owned(),
            "/./proc".to_owned(),
            "//proc".to_owned(),
            "/proc/self".to_owned(),
            "/proc/self/root".to_owned(),
            "/proc/self/fd/..".to_owned(),
            "/sys".to_owned(),
            "/sys/kernel".to_owned(),
            "/dev".to_owned(),
            in_temp("to-proc"),
            in_temp("to-proc/self"),
            in_temp("to-root"),
            in_temp("up"),
            in_temp("up/proc"),
            in_temp("up/sys/kernel"),
        ];
        for spelling in &spellings {
            for mode in [DirMode::ReadOnly, DirMode::ReadWrite] {
                let err = GrantedDir::open(Path::new(spelling), "/g", mode).unwrap_err();
                assert!(
                    err.starts_with("cannot be granted: it ")
                        && (err.contains("exposes the whole host")
                            || err.contains("expose the host")),
                    "{spelling}: {err}"
                );
            }
        }
        if Path::new("/dev/shm").is_dir() {
            let err = GrantedDir::open(Path::new("/dev/shm"), "/g", DirMode::ReadOnly).unwrap_err();
            assert!(err.contains("in /dev"), "{err}");
        }
        // A directory of its own is still granted.
        assert!(GrantedDir::open(root.path(), "/g", DirMode::ReadOnly).is_ok());
    }

    #[test]
    fn airlock_files_stay_out_of_grants() {
        let root = tempfile::tempdir().unwrap();
        let tools = root.path().join("tools");
        std::fs::create_dir(&tools).unwrap();
        std::fs::write(root.path().join("keys"), "k").unwrap();
        let protected = ProtectedPaths::default()
            .no_write(&tools)
            .no_access(&root.path().join("keys"));
        let rw = grant(root.path(), "/r", DirMode::ReadWrite);
        let ro_tools = grant(&tools, "/t", DirMode::ReadOnly);
        let ro_root = grant(root.path(), "/r", DirMode::ReadOnly);
        assert!(protected.check(&rw).unwrap_err().contains("loads code"));
        assert!(protected.check(&ro_tools).is_ok());
        assert!(protected.check(&ro_root).unwrap_err().contains("keys"));
    }
}
