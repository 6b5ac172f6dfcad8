//! `airlock new NAME`: a tool crate of its own, with one example tool, that
//! builds into a component Airlock serves (with a plain `cargo build`, its
//! default target being `wasm32-wasip2`, or cargo-component), its unit
//! tests and a README saying how. With `--language python|javascript`, a
//! project of one `app.py` or `app.js` instead, built by the build script of
//! the kit this binary carries ([`kit`]).
//!
//! The files are the templates in `scaffold/`, with `{{name}}` (the crate),
//! `{{lib}}` (its library, the `.wasm`'s name), `{{tool}}` (the example
//! tool) and `{{sdk}}` (the `airlock-guest` dependency) filled in. Unless
//! told to use a local SDK, the crate gets the SDK this binary carries
//! ([`sdk`]), written into it, so it builds offline and without a checkout.

mod kit;
mod sdk;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

/// What `airlock new` creates, and where.
#[derive(Debug, Clone)]
pub struct NewToolConfig {
    /// The crate's name, also the example tool's (see [`check_name`]).
    pub name: String,
    /// The directory the crate's directory is created in.
    pub parent: PathBuf,
    /// Where the crate gets the guest SDK from (a Rust crate only).
    pub sdk: SdkSource,
    /// The language of the tool.
    pub language: Language,
}

/// The language a new tool is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Language {
    /// A crate built with cargo.
    #[default]
    Rust,
    /// An `app.py` built with componentize-py.
    Python,
    /// An `app.js` (an ES module) built with componentize-js.
    Javascript,
}

/// Where a new tool crate gets `airlock-guest` from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SdkSource {
    /// The SDK this `airlock` carries, of its own version (the SDK and the
    /// host are released together), written into the new crate's
    /// `vendor/airlock-guest`.
    Carried,
    /// A local copy of the SDK crate (its directory, holding `Cargo.toml`).
    Path(PathBuf),
}

/// The templates, by the path of the file each one becomes.
const TEMPLATES: [(&str, &str); 5] = [
    ("Cargo.toml", include_str!("Cargo.toml.template")),
    // What a plain `cargo build` builds, then how the component is linked:
    // the very file this repository's own guests are built with.
    (
        ".cargo/config.toml",
        concat!(
            include_str!("cargo-build.toml.template"),
            include_str!("../../../.cargo/config.toml")
        ),
    ),
    (".gitignore", include_str!("gitignore.template")),
    ("README.md", include_str!("README.md.template")),
    ("src/lib.rs", include_str!("lib.rs.template")),
];

/// The templates of a Python project.
const PYTHON_TEMPLATES: [(&str, &str); 3] = [
    ("app.py", include_str!("app.py.template")),
    (".gitignore", include_str!("gitignore-python.template")),
    ("README.md", include_str!("README-python.md.template")),
];

/// The templates of a JavaScript project.
const JAVASCRIPT_TEMPLATES: [(&str, &str); 3] = [
    ("app.js", include_str!("app.js.template")),
    (".gitignore", include_str!("gitignore-javascript.template")),
    ("README.md", include_str!("README-javascript.md.template")),
];

/// The longest name: the limit on a tool's name.
const MAX_NAME_LEN: usize = 64;

/// Names cargo refuses for a crate, separated by spaces: Rust's keywords and
/// the crates of the standard library.
const RESERVED: &str = "\
    abstract alloc as async await become box break const continue core crate do \
    dyn else enum extern false final fn for gen if impl in let loop macro match \
    mod move mut override priv proc_macro pub ref return self Self static std \
    struct super test trait true try type typeof unsafe unsized use virtual \
    where while yield";

/// Checks that `name` can name a tool, its directory and its `.wasm` file: 1
/// to 64 ASCII letters, digits, `_` and `-`, starting with a letter; for a
/// Rust crate, no keyword or standard crate either. The name of a Python or
/// JavaScript project is no identifier of its language (its module is
/// `app`), so their keywords are fine. The error says which rule it breaks.
pub fn check_name(name: &str, language: Language) -> Result<(), String> {
    let Some(first) = name.chars().next() else {
        return Err("the name is empty".into());
    };
    if name.len() > MAX_NAME_LEN {
        return Err(format!(
            "`{name}` is longer than {MAX_NAME_LEN} characters (the limit on a tool's name)"
        ));
    }
    if !first.is_ascii_alphabetic() {
        return Err(format!("`{name}` must start with an ASCII letter"));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
    {
        return Err(format!(
            "`{name}` has {bad:?}: a tool name takes ASCII letters, digits, `_` and `-`"
        ));
    }
    let lib = lib_name(name);
    if language == Language::Rust && RESERVED.split_whitespace().any(|reserved| reserved == lib) {
        return Err(format!(
            "`{name}` is a Rust keyword or a standard crate's name"
        ));
    }
    Ok(())
}

/// The path of the component the build makes of the project `name` in
/// `language` (for Rust, a plain `cargo build --release`), from its directory.
pub fn component_path(name: &str, language: Language) -> String {
    match language {
        Language::Rust => format!("target/wasm32-wasip2/release/{}.wasm", lib_name(name)),
        Language::Python | Language::Javascript => format!("{name}.wasm"),
    }
}

/// The command that builds the project, run in its directory.
pub fn build_command(language: Language) -> String {
    kit::build_script(language).map_or_else(
        || "cargo build --release".to_owned(),
        |script| format!("{script} --out . ."),
    )
}

/// Creates the crate `config.name` in `config.parent` (made if missing) and
/// returns its directory. Refuses a name [`check_name`] refuses, a directory
/// that exists already, and an SDK path without a `Cargo.toml`. With
/// [`SdkSource::Carried`], writes the SDK into the crate too.
pub fn create(config: &NewToolConfig) -> anyhow::Result<PathBuf> {
    check_name(&config.name, config.language).map_err(anyhow::Error::msg)?;
    let (templates, sdk) = match config.language {
        Language::Rust => (&TEMPLATES[..], dependency(&config.sdk)?),
        _ if config.sdk != SdkSource::Carried => {
            bail!(
                "an SDK path is for a Rust crate: a Python or JavaScript project gets its SDK from this binary"
            )
        }
        Language::Python => (&PYTHON_TEMPLATES[..], String::new()),
        Language::Javascript => (&JAVASCRIPT_TEMPLATES[..], String::new()),
    };
    std::fs::create_dir_all(&config.parent)
        .with_context(|| format!("creating {}", config.parent.display()))?;
    let dir = config.parent.join(&config.name);
    std::fs::create_dir(&dir).with_context(|| {
        format!(
            "creating {} (a new tool gets a directory of its own)",
            dir.display()
        )
    })?;
    let lib = lib_name(&config.name);
    for (path, template) in templates {
        let text = template
            .replace("{{name}}", &config.name)
            .replace("{{lib}}", &lib)
            .replace("{{tool}}", &config.name)
            .replace("{{sdk}}", &sdk);
        write_file(&dir.join(path), &text, false)?;
    }
    match config.language {
        Language::Rust if config.sdk == SdkSource::Carried => sdk::write(&dir)?,
        Language::Rust => {}
        language => kit::write(&dir, language)?,
    }
    Ok(dir)
}

/// Writes `text` to `path`, making its directory; `executable` makes it a
/// program (mode 0755) on Unix.
fn write_file(path: &Path, text: &str, executable: bool) -> anyhow::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    if executable {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
            .with_context(|| format!("making {} executable", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = executable;
    Ok(())
}

/// The crate's library name: its name with `-` as `_`, as cargo makes it.
fn lib_name(name: &str) -> String {
    name.replace('-', "_")
}

/// The `airlock-guest` dependency's value in `Cargo.toml` (an inline table).
fn dependency(sdk: &SdkSource) -> anyhow::Result<String> {
    let source = match sdk {
        SdkSource::Carried => format!("path = \"{}\"", sdk::DIR),
        SdkSource::Path(path) => {
            let dir = std::fs::canonicalize(path)
                .with_context(|| format!("the SDK path {}", path.display()))?;
            if !dir.join("Cargo.toml").is_file() {
                bail!(
                    "the SDK path {} holds no Cargo.toml (give the airlock-guest crate's directory)",
                    dir.display()
                );
            }
            format!("path = {}", toml_string(&dir)?)
        }
    };
    Ok(format!("{{ {source}, features = [\"schemars\"] }}"))
}

/// `path` as a TOML basic string. JSON's string escapes are a subset of
/// TOML's, so serde_json writes it.
fn toml_string(path: &Path) -> anyhow::Result<String> {
    let text = path
        .to_str()
        .with_context(|| format!("the path {} is not UTF-8", path.display()))?;
    Ok(serde_json::Value::from(text).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(parent: &Path, name: &str, sdk: SdkSource) -> NewToolConfig {
        NewToolConfig {
            name: name.into(),
            parent: parent.to_path_buf(),
            sdk,
            language: Language::Rust,
        }
    }

    fn config_in(parent: &Path, name: &str, language: Language) -> NewToolConfig {
        NewToolConfig {
            language,
            ..config(parent, name, SdkSource::Carried)
        }
    }

    fn manifest_of(dir: &Path) -> toml::Table {
        let text = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
        text.parse().expect("Cargo.toml is TOML")
    }

    #[test]
    fn names_of_crates_and_tools_pass() {
        for name in [
            "weather",
            "weather-report",
            "get_time2",
            "A",
            &"x".repeat(64),
        ] {
            for language in [Language::Rust, Language::Python, Language::Javascript] {
                assert_eq!(check_name(name, language), Ok(()), "{name}");
            }
        }
    }

    #[test]
    fn other_names_are_refused_with_the_rule() {
        for (name, rule) in [
            ("", "empty"),
            ("2fast", "start with an ASCII letter"),
            ("_private", "start with an ASCII letter"),
            ("my.tool", "'.'"),
            ("my tool", "' '"),
            ("café", "'é'"),
            ("../escape", "start with an ASCII letter"),
            ("fn", "keyword"),
            ("Self", "keyword"),
            ("std", "standard crate"),
            ("proc-macro", "standard crate"),
            (&"x".repeat(65), "longer than 64"),
        ] {
            let error = check_name(name, Language::Rust).expect_err(name);
            assert!(error.contains(rule), "{name}: {error}");
        }
    }

    #[test]
    fn rust_keywords_name_python_and_javascript_tools_but_the_other_rules_hold() {
        // Rust's and the standard crates' names, and Python's and
        // JavaScript's keywords: none is an identifier of the project.
        for name in [
            "fn",
            "Self",
            "std",
            "proc-macro",
            "type",
            "class",
            "import",
            "lambda",
            "function",
        ] {
            for language in [Language::Python, Language::Javascript] {
                assert_eq!(check_name(name, language), Ok(()), "{name} in {language:?}");
            }
        }
        for name in ["", "2fast", "my.tool", "../escape", &"x".repeat(65)] {
            for language in [Language::Python, Language::Javascript] {
                assert!(
                    check_name(name, language).is_err(),
                    "{name} in {language:?}"
                );
            }
        }
    }

    #[test]
    fn creates_a_tool_crate_with_the_sdk_this_binary_carries() {
        let parent = tempfile::tempdir().unwrap();
        let dir = create(&config(parent.path(), "weather-report", SdkSource::Carried)).unwrap();
        assert_eq!(dir, parent.path().join("weather-report"));

        let manifest = manifest_of(&dir);
        assert_eq!(manifest["package"]["name"].as_str(), Some("weather-report"));
        let crate_type = manifest["lib"]["crate-type"].as_array().unwrap();
        assert_eq!(crate_type.len(), 1);
        assert_eq!(crate_type[0].as_str(), Some("cdylib"));
        let sdk = &manifest["dependencies"]["airlock-guest"];
        assert_eq!(sdk["path"].as_str(), Some("vendor/airlock-guest"));
        assert!(sdk.get("version").is_none());
        let vendored = manifest_of(&dir.join("vendor/airlock-guest"));
        assert_eq!(vendored["package"]["name"].as_str(), Some("airlock-guest"));
        assert_eq!(
            vendored["package"]["version"].as_str(),
            Some(env!("CARGO_PKG_VERSION"))
        );
        assert!(dir.join("vendor/airlock-guest/wit/worlds.wit").is_file());
        assert!(dir.join("vendor/airlock-guest/src/lib.rs").is_file());
        assert_eq!(sdk["features"].as_array().unwrap().len(), 1);
        assert!(manifest["workspace"].is_table());

        let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
        assert!(lib.contains(r#"ToolRouter::new().tool("weather-report", greet"#));
        assert!(lib.contains("#[test]"));
        let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(readme.contains("target/wasm32-wasip2/release/weather_report.wasm"));
        assert!(readme.contains("airlock serve --tools tools"));
        let linking: toml::Table = std::fs::read_to_string(dir.join(".cargo/config.toml"))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(
            linking["build"]["target"].as_str(),
            Some("wasm32-wasip2"),
            "a plain `cargo build` builds the component"
        );
        assert_eq!(
            component_path("weather-report", Language::Rust),
            "target/wasm32-wasip2/release/weather_report.wasm"
        );
        for target in ["wasm32-wasip2", "wasm32-wasip1"] {
            let flags = linking["target"][target]["rustflags"].as_array().unwrap();
            assert!(
                flags
                    .iter()
                    .any(|f| f.as_str() == Some("link-arg=--initial-heap=786432")),
                "{target}: {flags:?}"
            );
        }
        let ignored = std::fs::read_to_string(dir.join(".gitignore")).unwrap();
        assert_eq!(ignored.trim(), "/target");
        assert_filled(&dir, &TEMPLATES);
    }

    /// Asserts that no file `templates` wrote into `dir` has a placeholder left.
    #[track_caller]
    fn assert_filled(dir: &Path, templates: &[(&str, &str)]) {
        for (path, _) in templates {
            let text = std::fs::read_to_string(dir.join(path)).unwrap();
            assert!(!text.contains("{{"), "{path} has an unfilled placeholder");
        }
    }

    #[test]
    fn a_local_sdk_is_named_by_its_absolute_path() {
        let parent = tempfile::tempdir().unwrap();
        let sdk = tempfile::tempdir().unwrap();
        let quoted = sdk.path().join(r#"sdk "quoted" \ dir"#);
        std::fs::create_dir(&quoted).unwrap();
        std::fs::write(quoted.join("Cargo.toml"), "").unwrap();

        let dir = create(&config(parent.path(), "t", SdkSource::Path(quoted.clone()))).unwrap();
        let manifest = manifest_of(&dir);
        let sdk_path = manifest["dependencies"]["airlock-guest"]["path"]
            .as_str()
            .unwrap();
        assert_eq!(Path::new(sdk_path), std::fs::canonicalize(&quoted).unwrap());
        assert!(
            manifest["dependencies"]["airlock-guest"]
                .get("version")
                .is_none()
        );
        assert!(!dir.join("vendor").exists());
    }

    #[test]
    fn refuses_an_existing_directory_a_bad_name_and_a_path_without_a_crate() {
        let parent = tempfile::tempdir().unwrap();
        std::fs::create_dir(parent.path().join("taken")).unwrap();
        let error = create(&config(parent.path(), "taken", SdkSource::Carried)).unwrap_err();
        assert!(format!("{error:#}").contains("taken"), "{error:#}");

        let error = create(&config(parent.path(), "no.dots", SdkSource::Carried)).unwrap_err();
        assert!(format!("{error:#}").contains("'.'"), "{error:#}");
        assert!(!parent.path().join("no.dots").exists());

        let empty = tempfile::tempdir().unwrap();
        let sdk = SdkSource::Path(empty.path().to_path_buf());
        let error = create(&config(parent.path(), "fine", sdk)).unwrap_err();
        assert!(
            format!("{error:#}").contains("holds no Cargo.toml"),
            "{error:#}"
        );
        assert!(!parent.path().join("fine").exists());
    }

    #[test]
    fn creates_a_python_or_javascript_project_with_the_kit_this_binary_carries() {
        for (language, templates, app, script, sdk) in [
            (
                Language::Python,
                &PYTHON_TEMPLATES[..],
                "app.py",
                ".airlock/scripts/build-python-tools",
                ".airlock/guest-sdks/python/airlock_guest/__init__.py",
            ),
            (
                Language::Javascript,
                &JAVASCRIPT_TEMPLATES[..],
                "app.js",
                ".airlock/scripts/build-javascript-tools",
                ".airlock/guest-sdks/javascript/airlock-guest/index.js",
            ),
        ] {
            let parent = tempfile::tempdir().unwrap();
            let dir = create(&config_in(parent.path(), "weather-report", language)).unwrap();
            assert_eq!(dir, parent.path().join("weather-report"));
            let source = std::fs::read_to_string(dir.join(app)).unwrap();
            assert!(
                source.contains(r#"name="weather-report""#)
                    || source.contains(r#"name: "weather-report""#),
                "{source}"
            );
            assert_eq!(build_command(language), format!("{script} --out . ."));
            assert_eq!(
                component_path("weather-report", language),
                "weather-report.wasm"
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                let mode = std::fs::metadata(dir.join(script))
                    .unwrap()
                    .permissions()
                    .mode();
                assert_eq!(mode & 0o111, 0o111, "{script} is executable");
            }
            assert!(dir.join(sdk).is_file(), "{sdk}");
            assert!(dir.join(".airlock/guest-sdk/wit/worlds.wit").is_file());
            let readme = std::fs::read_to_string(dir.join("README.md")).unwrap();
            assert!(readme.contains(&build_command(language)), "{readme}");
            assert!(readme.contains("weather-report.wasm"), "{readme}");
            assert!(!dir.join("Cargo.toml").exists() && !dir.join("vendor").exists());
            assert_filled(&dir, templates);
        }
    }

    #[test]
    fn an_sdk_path_is_refused_for_python_and_javascript() {
        let parent = tempfile::tempdir().unwrap();
        let sdk = tempfile::tempdir().unwrap();
        for language in [Language::Python, Language::Javascript] {
            let config = NewToolConfig {
                sdk: SdkSource::Path(sdk.path().to_path_buf()),
                ..config_in(parent.path(), "t", language)
            };
            let error = create(&config).unwrap_err();
            assert!(
                format!("{error:#}").contains("an SDK path is for a Rust crate"),
                "{error:#}"
            );
            assert!(!parent.path().join("t").exists());
        }
    }
}
