//! Where the build puts the `airlock` binary and the guest components.

use std::path::{Path, PathBuf};

/// What to do when a build product is missing.
pub const BUILD_HINT: &str = "run scripts/test (it builds the components first)";

/// The workspace root (the parent of this crate).
///
/// `cargo test` sets `CARGO_MANIFEST_DIR` when it runs a test, and that is
/// preferred to the directory this crate was compiled in: cargo reuses a test
/// executable from a shared target directory for an unchanged checkout at
/// another path, and the tests must read that checkout's files.
pub fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .filter(|dir| !dir.is_empty())
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .parent()
        .expect("the e2e crate lives inside the workspace")
        .to_path_buf()
}

/// Cargo's target directory: `CARGO_TARGET_DIR` when set, else the directory
/// this test executable was built into (`<target>/<profile>/deps/<exe>`), else
/// `<workspace>/target`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.is_relative() {
            workspace_root().join(dir)
        } else {
            dir
        };
    }
    if let Some(dir) = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.ancestors().nth(3).map(Path::to_path_buf))
        .filter(|dir| dir.join("CACHEDIR.TAG").is_file())
    {
        return dir;
    }
    workspace_root().join("target")
}

/// Names another `airlock` binary for the end-to-end tests to run (e.g. an
/// older build, to see a new test fail on it).
pub const BIN_ENV: &str = "AIRLOCK_E2E_BIN";

/// The release `airlock` binary, or the one [`BIN_ENV`] names. Panics with
/// [`BUILD_HINT`] when it is missing.
pub fn airlock_bin() -> PathBuf {
    let path = std::env::var_os(BIN_ENV)
        .filter(|bin| !bin.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            target_dir()
                .join("release")
                .join(format!("airlock{}", std::env::consts::EXE_SUFFIX))
        });
    assert!(
        path.is_file(),
        "the airlock binary {} does not exist: {BUILD_HINT}",
        path.display()
    );
    path
}

/// The release build of guest component `name` (crate name; dashes or
/// underscores). Panics with [`BUILD_HINT`] when it is missing.
pub fn component(name: &str) -> PathBuf {
    let dir = target_dir().join("wasm32-wasip2").join("release");
    // Libraries (cdylib) are named with underscores, binaries keep the crate's
    // own spelling; accept either.
    let candidates = [
        dir.join(format!("{}.wasm", name.replace('-', "_"))),
        dir.join(format!("{}.wasm", name.replace('_', "-"))),
    ];
    candidates
        .iter()
        .find(|p| p.is_file())
        .cloned()
        .unwrap_or_else(|| {
            panic!(
                "the component {} does not exist: {BUILD_HINT}",
                candidates[0].display()
            )
        })
}
