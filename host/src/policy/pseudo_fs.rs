//! The places that expose the host itself, which no grant may be, contain
//! or lie inside, whatever a manifest says: the root of the file system,
//! `/proc`, `/sys` and `/dev` (whatever is mounted there), and every mount
//! of the kernel's pseudo-filesystems ([`HOST_FILESYSTEMS`]) wherever it
//! is mounted.
//!
//! Through them a guest would read Airlock's own process: its environment
//! (`/proc/self/environ`, with the state keys when they come from
//! `AIRLOCK_STATE_KEYS`), its memory (`/proc/self/mem`), its open files
//! (`/proc/self/fd`), and the kernel's and the devices' state besides.
//!
//! The check runs on the directory a grant resolved to (symbolic links
//! followed, `.` and `..` gone), so every spelling of these places is the
//! same place: `/proc/../proc`, `/./proc`, a link to `/proc`,
//! `/proc/self/root`. A mount of one of these file systems elsewhere (a
//! bind mount of `/proc`, a second `sysfs`) is found in the mount table,
//! `/proc/self/mountinfo`. Inside a granted directory the guest's paths
//! cannot leave it (wasmtime-wasi resolves them beneath the granted
//! directory and refuses absolute links and `..` past it), so a link to
//! `/proc` inside a granted directory leads nowhere.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt as _;
use std::path::{Path, PathBuf};

/// Directories that expose the host whatever file system is mounted on
/// them (in a container, `/dev` is often a plain `tmpfs`).
const HOST_DIRS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// Kinds of file system (as the mount table names them) that expose the
/// host's processes, kernel or devices, wherever they are mounted.
const HOST_FILESYSTEMS: &[&str] = &[
    "proc",
    "sysfs",
    "devtmpfs",
    "devpts",
    "debugfs",
    "tracefs",
    "securityfs",
    "cgroup",
    "cgroup2",
    "bpf",
    "configfs",
    "efivarfs",
    "pstore",
    "binfmt_misc",
    "fusectl",
    "selinuxfs",
    "mqueue",
    "nsfs",
];

/// Where this process's mounts are listed.
const MOUNT_TABLE: &str = "/proc/self/mountinfo";

/// Refuses `dir` (a canonical directory: absolute, links resolved) if it
/// is the root, lies in `/proc`, `/sys` or `/dev`, or is, contains or lies
/// inside a mount of a [`HOST_FILESYSTEMS`] kind. The error says why.
pub(super) fn check(dir: &Path) -> Result<(), String> {
    check_path(dir)?;
    let table = std::fs::read(MOUNT_TABLE).map_err(|err| {
        format!("cannot read {MOUNT_TABLE} to check that it exposes no part of the host: {err}")
    })?;
    check_mounts(dir, &mounts(&table))
}

/// The rule on the path alone: not the root, not in `/proc`, `/sys` or
/// `/dev`.
fn check_path(dir: &Path) -> Result<(), String> {
    if dir == Path::new("/") {
        return Err(
            "is the root of the file system, which exposes the whole host (Airlock's own \
             process in /proc among it); grant the directories a component needs"
                .to_owned(),
        );
    }
    if let Some(host_dir) = HOST_DIRS.iter().find(|host_dir| dir.starts_with(host_dir)) {
        return Err(format!(
            "resolves to {}, in {host_dir}: /proc, /sys and /dev expose the host (Airlock's own \
             process, its environment and memory, the kernel, the devices) and are never granted",
            dir.display()
        ));
    }
    Ok(())
}

/// One line of the mount table: where a file system is mounted, and its
/// kind.
#[derive(Debug, PartialEq, Eq)]
struct Mount {
    point: PathBuf,
    kind: String,
}

/// The rule on the mount table: `dir` neither contains nor lies inside a
/// mount of a host file system.
fn check_mounts(dir: &Path, mounts: &[Mount]) -> Result<(), String> {
    let exposing = mounts
        .iter()
        .filter(|mount| HOST_FILESYSTEMS.contains(&mount.kind.as_str()));
    for mount in exposing {
        let relation = if mount.point.starts_with(dir) {
            "contains"
        } else if dir.starts_with(&mount.point) {
            "lies in"
        } else {
            continue;
        };
        return Err(format!(
            "resolves to {}, which {relation} {}, a mount of `{}`: it exposes the host \
             (Airlock's own process, the kernel or the devices) and is never granted",
            dir.display(),
            mount.point.display(),
            mount.kind
        ));
    }
    Ok(())
}

/// Parses `/proc/self/mountinfo`: `ID PARENT MAJ:MIN ROOT POINT OPTIONS
/// [OPTIONAL...] - KIND SOURCE SUPER-OPTIONS`, one mount a line. Lines it
/// cannot read are left out.
fn mounts(table: &[u8]) -> Vec<Mount> {
    table
        .split(|&byte| byte == b'\n')
        .filter_map(|line| {
            let fields: Vec<&[u8]> = line.split(|&byte| byte == b' ').collect();
            let point = fields.get(4)?;
            let separator = fields.iter().position(|field| *field == b"-")?;
            let kind = fields.get(separator + 1)?;
            Some(Mount {
                point: PathBuf::from(OsString::from_vec(unescape(point))),
                kind: String::from_utf8_lossy(kind).into_owned(),
            })
        })
        .collect()
}

/// A mount table field with its octal escapes (`\040` for a space, `\011`,
/// `\012`, `\134`) turned back into bytes.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut rest = field;
    while let Some((&byte, tail)) = rest.split_first() {
        let octal = tail
            .get(..3)
            .filter(|digits| byte == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .map(|digits| {
                digits
                    .iter()
                    .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'))
            })
            .and_then(|value| u8::try_from(value).ok());
        match octal {
            Some(value) => {
                out.push(value);
                rest = &tail[3..];
            }
            None => {
                out.push(byte);
                rest = tail;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw
23 22 0:21 / /proc rw,nosuid shared:12 - proc proc rw
24 22 0:22 / /sys rw,nosuid shared:2 - sysfs sysfs rw
25 22 0:5 / /dev rw,nosuid shared:3 - devtmpfs udev rw
26 25 0:23 / /dev/shm rw shared:4 - tmpfs tmpfs rw
40 22 0:21 / /srv/with\\040space/p rw shared:12 - proc proc rw
41 22 0:30 / /data rw - tmpfs tmpfs rw
";

    fn table() -> Vec<Mount> {
        mounts(TABLE.as_bytes())
    }

    #[test]
    fn the_mount_table_is_read_with_its_escapes() {
        let mounts = table();
        assert_eq!(mounts.len(), 7);
        assert_eq!(
            mounts[5],
            Mount {
                point: PathBuf::from("/srv/with space/p"),
                kind: "proc".to_owned()
            }
        );
        assert_eq!(unescape(b"a\\134b\\012"), b"a\\b\n");
        assert_eq!(unescape(b"tail\\04"), b"tail\\04");
    }

    #[test]
    fn the_root_and_the_host_directories_are_refused_by_path() {
        for refused in [
            "/",
            "/proc",
            "/proc/1/root",
            "/sys/kernel",
            "/dev",
            "/dev/shm",
        ] {
            assert!(check_path(Path::new(refused)).is_err(), "{refused}");
        }
        for allowed in ["/srv", "/procedures", "/devices/x", "/data"] {
            assert_eq!(check_path(Path::new(allowed)), Ok(()), "{allowed}");
        }
    }

    #[test]
    fn a_mount_of_a_host_file_system_anywhere_is_refused() {
        let mounts = table();
        let err = check_mounts(Path::new("/srv"), &mounts).unwrap_err();
        assert!(
            err.contains("contains /srv/with space/p, a mount of `proc`"),
            "{err}"
        );
        let err = check_mounts(Path::new("/srv/with space/p/self"), &mounts).unwrap_err();
        assert!(err.contains("lies in /srv/with space/p"), "{err}");
        // A tmpfs is no host file system, and a sibling of a mount is apart.
        assert_eq!(check_mounts(Path::new("/data"), &mounts), Ok(()));
        assert_eq!(check_mounts(Path::new("/srv/other"), &mounts), Ok(()));
    }

    #[test]
    fn this_hosts_own_pseudo_filesystems_are_refused() {
        for refused in ["/proc", "/sys", "/dev", "/"] {
            assert!(check(Path::new(refused)).is_err(), "{refused}");
        }
        let dir = tempfile::tempdir().unwrap();
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(check(&canonical), Ok(()));
    }
}
