//! Lists the guest SDK's packaged files (`guest-sdk/`: its manifest, README,
//! sources, tests and WIT) for `airlock new`, which writes them into every
//! tool crate it creates (`src/scaffold/sdk.rs`): `$OUT_DIR/guest_sdk.rs`
//! holds `[(relative path, include_str!(file)), ...]`, so the binary carries
//! the SDK of its own version and a new crate builds without a registry or
//! a checkout.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The SDK's directories whose files are packaged, beside `Cargo.toml` and
/// `README.md`: what its manifest's `include` names.
const DIRS: [&str; 3] = ["src", "tests", "wit"];

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap());
    let sdk = manifest_dir.join("../guest-sdk");
    let mut files = vec![PathBuf::from("Cargo.toml"), PathBuf::from("README.md")];
    for dir in DIRS {
        println!("cargo:rerun-if-changed={}", sdk.join(dir).display());
        collect(&sdk, Path::new(dir), &mut files);
    }
    for file in ["Cargo.toml", "README.md"] {
        println!("cargo:rerun-if-changed={}", sdk.join(file).display());
    }
    files.sort();
    let mut code = String::from("[\n");
    for file in &files {
        let relative = file.to_str().expect("SDK paths are UTF-8");
        let absolute = sdk.join(file).canonicalize().expect("an SDK file");
        let absolute = absolute.to_str().expect("SDK paths are UTF-8");
        writeln!(code, "    ({relative:?}, include_str!({absolute:?})),").unwrap();
    }
    code.push(']');
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap()).join("guest_sdk.rs");
    std::fs::write(out, code).expect("write guest_sdk.rs");
}

/// Adds the files under `sdk/dir` (recursively) to `files`, relative to `sdk`.
fn collect(sdk: &Path, dir: &Path, files: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(sdk.join(dir))
        .unwrap_or_else(|e| panic!("read {}: {e}", sdk.join(dir).display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let path = dir.join(entry.file_name());
        if entry.file_type().expect("a file type").is_dir() {
            collect(sdk, &path, files);
        } else {
            files.push(path);
        }
    }
}
