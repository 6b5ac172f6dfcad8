//! The build kits this binary carries for Python and JavaScript tools: what
//! `scripts/build-python-tools` and `scripts/build-javascript-tools` read (the
//! script, its toolchain's pins, the language's guest SDK and the WIT),
//! listed by `build.rs` at their paths in the repository. `airlock new
//! --language python|javascript` writes the kit into the new project's [`DIR`],
//! in the repository's layout, so the script runs there as it does in a
//! checkout: the project builds with a toolchain only, no checkout.

use std::path::Path;

use super::Language;

/// Where in a new project the kit is written.
pub const DIR: &str = ".airlock";

/// What `scripts/build-python-tools` reads, by its path in the repository.
const PYTHON: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/python_kit.rs"));

/// What `scripts/build-javascript-tools` reads, by its path in the repository.
const JAVASCRIPT: &[(&str, &str)] = &include!(concat!(env!("OUT_DIR"), "/javascript_kit.rs"));

/// The build script of `language`'s kit, from the project's directory.
pub fn build_script(language: Language) -> Option<String> {
    let script = match language {
        Language::Rust => return None,
        Language::Python => "build-python-tools",
        Language::Javascript => "build-javascript-tools",
    };
    Some(format!("{DIR}/scripts/{script}"))
}

/// Writes `language`'s kit into `project`/[`DIR`]; its scripts executable.
pub fn write(project: &Path, language: Language) -> anyhow::Result<()> {
    let files = match language {
        Language::Rust => return Ok(()),
        Language::Python => PYTHON,
        Language::Javascript => JAVASCRIPT,
    };
    let kit = project.join(DIR);
    for (path, text) in files {
        super::write_file(&kit.join(path), text, path.starts_with("scripts/"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn carries_what_the_build_scripts_read() {
        for (files, wanted) in [
            (
                PYTHON,
                &[
                    "scripts/build-python-tools",
                    "scripts/app-outputs.sh",
                    "scripts/python-toolchain",
                    "scripts/venv-common.sh",
                    "guest-sdks/python/toolchain.lock",
                    "guest-sdks/python/airlock_guest/__init__.py",
                    "guest-sdk/wit/worlds.wit",
                ][..],
            ),
            (
                JAVASCRIPT,
                &[
                    "scripts/build-javascript-tools",
                    "scripts/app-outputs.sh",
                    "scripts/javascript-toolchain",
                    "guest-sdks/javascript/airlock-guest/index.js",
                    "guest-sdks/javascript/airlock-guest/package.json",
                    "guest-sdks/javascript/toolchain/package-lock.json",
                    "guest-sdks/javascript/toolchain/bundle.mjs",
                    "guest-sdk/wit/worlds.wit",
                ][..],
            ),
        ] {
            for path in wanted {
                assert!(files.iter().any(|(p, _)| p == path), "{path}");
            }
            assert!(files.iter().all(|(p, _)| !p.contains("__pycache__")));
        }
    }
}
