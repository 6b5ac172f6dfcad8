//! Lists the files `airlock new` writes into the projects it creates, so the
//! binary carries them at its own version and a new project builds without a
//! registry or a checkout:
//!
//! - `$OUT_DIR/guest_sdk.rs`: the Rust guest SDK's packaged files
//!   (`guest-sdk/`: its manifest, README, sources, tests and WIT), written
//!   into every Rust tool crate (`src/scaffold/sdk.rs`);
//! - `$OUT_DIR/python_kit.rs` and `$OUT_DIR/javascript_kit.rs`: what
//!   `scripts/build-python-tools` and `scripts/build-javascript-tools` read
//!   (the script, its toolchain, the language's SDK and the WIT), by their
//!   path in this repository, written into a Python or JavaScript project's
//!   `.airlock/` (`src/scaffold/kit.rs`).
//!
//! Each holds `[(relative path, include_str!(file)), ...]`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The SDK's directories whose files are packaged, beside `Cargo.toml` and
/// `README.md`: what its manifest's `include` names.
const DIRS: [&str; 3] = ["src", "tests", "wit"];

/// What `scripts/build-python-tools` reads, from the repository's root:
/// files, and directories taken whole.
const PYTHON_KIT: [&str; 7] = [
    "scripts/build-python-tools",
    "scripts/app-outputs.sh",
    "scripts/python-toolchain",
    "scripts/venv-common.sh",
    "guest-sdks/python/toolchain.lock",
    "guest-sdks/python/airlock_guest",
    "guest-sdk/wit",
];

/// What `scripts/build-javascript-tools` reads, from the repository's root.
const JAVASCRIPT_KIT: [&str; 6] = [
    "scripts/build-javascript-tools",
    "scripts/app-outputs.sh",
    "scripts/javascript-toolchain",
    "guest-sdks/javascript/airlock-guest",
    "guest-sdks/javascript/toolchain",
    "guest-sdk/wit",
];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let repo = manifest_dir.join("..");
    let sdk = repo.join("guest-sdk");
    let mut files = vec![PathBuf::from("Cargo.toml"), PathBuf::from("README.md")];
    for file in ["Cargo.toml", "README.md"] {
        println!("cargo:rerun-if-changed={}", sdk.join(file).display());
    }
    for dir in DIRS {
        println!("cargo:rerun-if-changed={}", sdk.join(dir).display());
        collect(&sdk, Path::new(dir), &mut files);
    }
    write_list("guest_sdk.rs", &sdk, files);
    for (list, kit) in [
        ("python_kit.rs", &PYTHON_KIT[..]),
        ("javascript_kit.rs", &JAVASCRIPT_KIT[..]),
    ] {
        let mut files = Vec::new();
        for path in kit {
            println!("cargo:rerun-if-changed={}", repo.join(path).display());
            if repo.join(path).is_dir() {
                collect(&repo, Path::new(path), &mut files);
            } else {
                files.push(PathBuf::from(path));
            }
        }
        write_list(list, &repo, files);
    }
}

/// Writes `$OUT_DIR/name`: `[(path, include_str!(root/path)), ...]` of `files`.
fn write_list(name: &str, root: &Path, mut files: Vec<PathBuf>) {
    files.sort();
    let mut code = String::from("[\n");
    for file in &files {
        let relative = file.to_str().expect("carried paths are UTF-8");
        let absolute = root.join(file).canonicalize().expect("a carried file");
        let absolute = absolute.to_str().expect("carried paths are UTF-8");
        writeln!(code, "    ({relative:?}, include_str!({absolute:?})),").unwrap();
    }
    code.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join(name);
    std::fs::write(out, code).unwrap_or_else(|e| panic!("write {name}: {e}"));
}

/// Adds the files under `root/dir` (recursively) to `files`, relative to
/// `root`; Python's byte-code caches are left out.
fn collect(root: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(root.join(dir))
        .unwrap_or_else(|e| panic!("read {}: {e}", root.join(dir).display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        if entry.file_name() == "__pycache__" {
            continue;
        }
        let path = dir.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            collect(root, &path, files);
        } else {
            files.push(path);
        }
    }
}
