//! The manifest file beside a component: `NAME.toml` next to `NAME.wasm`.
//!
//! ```toml
//! name-prefix = "py_"       # its tools and prompts served as py_NAME
//!
//! [limits]
//! memory = "32MiB"         # at most the server's --max-memory
//! timeout = "2s"            # wall-clock deadline of each call
//! fuel = 50_000_000         # instructions (roughly) per call; needs --enable-fuel
//! max-output = "256KiB"     # largest reply of one call, encoded; at most --max-output
//! max-concurrent = 4        # instances of this component running at once
//!
//! [[dirs]]
//! host = "data"             # relative to the manifest's directory
//! guest = "/data"
//! mode = "read-only"        # or "read-write"
//!
//! [env]
//! GREETING = { value = "hello" }
//! REGION = { from-env = "AIRLOCK_REGION" }   # copied from Airlock's environment
//! API_TOKEN = { secret = "api-token" }       # from --secrets-file
//!
//! [http]
//! allow = ["api.example.com", "localhost:8080"]
//!
//! [tools.search]            # one tool of the component, by name
//! rate-limit = "5/s"        # calls per caller: 5/s, 300/min, 2/10s
//! rate-limit-burst = 10     # calls at once after a quiet time [default: one period's]
//! allow = ["scope:search"]  # who may call it (replaces [access] for it)
//!
//! [access]                  # who may use what the component serves
//! allow = ["authenticated", ["group:ops", "scope:mcp:tools"]]
//!
//! [prompts.review]          # one prompt, by name
//! allow = ["group:reviewers"]
//!
//! [resources."file:///notes/{name}"]   # one resource or template, by URI
//! allow = ["scope:notes:read"]
//! ```
//!
//! Tool and prompt names are unique across the directory. `name-prefix`
//! serves the component's tools and prompts under `<prefix><name>` on the
//! wire (listings, calls, tasks, the server's `--access-policy`, audit
//! records, metrics and logs), while the component itself still sees its
//! own names, and so does this manifest (`[tools.NAME]`, `[prompts.NAME]`).
//! Resource URIs are never prefixed.
//!
//! Access rules (`allow`) are described in [`crate::access`]; a rule
//! naming an item the component does not serve is refused when it loads.
//!
//! Every section is optional and nothing is granted that is not written
//! here. Unknown keys and invalid values are refused, naming the file and
//! the key. Sizes and durations carry their unit, as in the server's options
//! (see [`crate::units`]); the old `memory-mib`, `timeout-ms` and
//! `max-output-kib` keys are refused with their new form.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::access::{ComponentRules, Rule};
use crate::quotas;
use crate::toml_error::toml_error;
use crate::units;
use crate::untrusted_file;

/// A parsed manifest, not yet resolved against the host (see
/// [`Policy::resolve`](super::Policy::resolve)).
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Manifest {
    /// Prepended to the name of each of its tools and prompts on the wire.
    pub name_prefix: Option<String>,
    /// Per-call limits that replace the server's defaults.
    #[serde(default)]
    pub limits: Limits,
    /// Host directories the component may open.
    #[serde(default)]
    pub dirs: Vec<DirGrant>,
    /// Environment variables the component sees.
    #[serde(default)]
    pub env: BTreeMap<String, EnvSource>,
    /// Outbound HTTP the component may make.
    #[serde(default)]
    pub http: Http,
    /// Settings of single tools of the component, by tool name.
    #[serde(default)]
    pub tools: BTreeMap<String, ToolSettings>,
    /// `[access] allow`: who may use what the component serves.
    pub access: Option<Access>,
    /// Who may get single prompts, by prompt name.
    #[serde(default)]
    pub prompts: BTreeMap<String, ItemAccess>,
    /// Who may read single resources, by URI or URI template.
    #[serde(default)]
    pub resources: BTreeMap<String, ItemAccess>,
}

/// `[access]`.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Access {
    /// Who may use everything the component serves (see [`crate::access`]).
    pub allow: Rule,
}

/// One `[prompts.NAME]` or `[resources."URI"]` table.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ItemAccess {
    /// Who may use the item; replaces `[access] allow` for it.
    pub allow: Rule,
}

/// `[limits]`.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Limits {
    /// Memory cap of one instance, in bytes (written with a unit: `"32MiB"`).
    #[serde(default, deserialize_with = "units::deserialize_size")]
    pub memory: Option<u64>,
    /// Wall-clock deadline of one call (written with a unit: `"2s"`).
    #[serde(default, deserialize_with = "units::deserialize_duration")]
    pub timeout: Option<Duration>,
    /// Fuel of one call (about one unit per wasm instruction).
    pub fuel: Option<u64>,
    /// Largest reply of one call, encoded, in bytes (written with a unit:
    /// `"256KiB"`).
    #[serde(default, deserialize_with = "units::deserialize_size")]
    pub max_output: Option<u64>,
    /// Most instances of this component running at once.
    pub max_concurrent: Option<u32>,
}

/// One `[[dirs]]` entry.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct DirGrant {
    /// The host directory; relative paths start at the manifest's directory.
    pub host: PathBuf,
    /// Where the guest sees it (an absolute guest path such as `/data`).
    pub guest: String,
    /// `read-only` (the default) or `read-write`.
    #[serde(default)]
    pub mode: DirMode,
}

/// What a component may do in a granted directory.
#[derive(Debug, Default, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum DirMode {
    /// List and read.
    #[default]
    ReadOnly,
    /// List, read, create, write, rename, remove.
    ReadWrite,
}

/// Where one environment variable's value comes from: exactly one key.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct EnvSource {
    /// A literal value.
    pub value: Option<String>,
    /// The value of this variable in Airlock's own environment.
    pub from_env: Option<String>,
    /// The value of this secret in the secrets file.
    pub secret: Option<String>,
}

/// `[http]`.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Http {
    /// `host` (default ports 80 and 443) or `host:port` entries.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// One `[tools.NAME]` table.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ToolSettings {
    /// How often each caller may call the tool (`"5/s"`).
    #[serde(default, deserialize_with = "quotas::deserialize_rate")]
    pub rate_limit: Option<quotas::Rate>,
    /// How many calls each caller may make at once after a quiet time.
    pub rate_limit_burst: Option<NonZeroU32>,
    /// Who may call the tool; replaces `[access] allow` for it.
    pub allow: Option<Rule>,
}

/// Largest manifest read, in bytes: a manifest is a few lines, and a
/// larger file is refused unread.
pub const MAX_MANIFEST_BYTES: u64 = 64 << 10;

impl Manifest {
    /// The manifest path of a component: `NAME.toml` beside `NAME.wasm`.
    pub fn path_for(component: &Path) -> PathBuf {
        component.with_extension("toml")
    }

    /// The text of the manifest at `path`, `None` if there is none. A
    /// manifest must be a regular file of at most [`MAX_MANIFEST_BYTES`] in
    /// UTF-8: anything else (a FIFO, a device, a huge file) is refused
    /// without waiting on it or reading it whole. The error says why.
    pub fn read(path: &Path) -> Result<Option<String>, String> {
        match untrusted_file::read(path, MAX_MANIFEST_BYTES) {
            Ok(bytes) => String::from_utf8(bytes)
                .map(Some)
                .map_err(|_| "cannot read it: it is not UTF-8 text".to_owned()),
            Err(err) if err.is_not_found() => Ok(None),
            Err(err) => Err(format!("not read: {err}")),
        }
    }

    /// Parses manifest text; the error names `file`, the line and the
    /// offending key (by quoting the line).
    pub fn parse(text: &str, file: &Path) -> Result<Manifest, String> {
        toml::from_str(text).map_err(|err| toml_error(&err, text, file))
    }

    /// The rules the manifest writes.
    pub fn access_rules(&self) -> ComponentRules {
        ComponentRules {
            component: self.access.as_ref().map(|access| access.allow.clone()),
            tools: allowed(&self.tools, |tool| tool.allow.as_ref()),
            prompts: allowed(&self.prompts, |prompt| Some(&prompt.allow)),
            resources: allowed(&self.resources, |resource| Some(&resource.allow)),
        }
    }
}

/// The `allow` rules of the tables of `items` that have one, by key.
fn allowed<T>(
    items: &BTreeMap<String, T>,
    allow: impl Fn(&T) -> Option<&Rule>,
) -> BTreeMap<String, Rule> {
    items
        .iter()
        .filter_map(|(key, item)| Some((key.clone(), allow(item)?.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, String> {
        Manifest::parse(text, Path::new("tool.toml"))
    }

    #[test]
    fn an_empty_manifest_grants_nothing() {
        assert_eq!(parse("").unwrap(), Manifest::default());
    }

    #[test]
    fn every_section_parses() {
        let manifest = parse(
            r#"
            name-prefix = "py_"

            [limits]
            memory = "16MiB"
            timeout = "500ms"
            fuel = 1000
            max-output = "8KiB"
            max-concurrent = 2

            [[dirs]]
            host = "data"
            guest = "/data"

            [[dirs]]
            host = "/tmp/out"
            guest = "/out"
            mode = "read-write"

            [env]
            A = { value = "1" }
            B = { from-env = "HOME" }
            C = { secret = "c" }

            [http]
            allow = ["example.com", "localhost:8080"]

            [tools.search]
            rate-limit = "5/s"
            rate-limit-burst = 10
            "#,
        )
        .unwrap();
        assert_eq!(manifest.name_prefix.as_deref(), Some("py_"));
        assert_eq!(manifest.limits.memory, Some(16 << 20));
        assert_eq!(manifest.limits.timeout, Some(Duration::from_millis(500)));
        assert_eq!(manifest.limits.max_output, Some(8 << 10));
        assert_eq!(manifest.limits.max_concurrent, Some(2));
        assert_eq!(manifest.dirs[0].mode, DirMode::ReadOnly);
        assert_eq!(manifest.dirs[1].mode, DirMode::ReadWrite);
        assert_eq!(manifest.env["B"].from_env.as_deref(), Some("HOME"));
        assert_eq!(manifest.http.allow.len(), 2);
        let search = &manifest.tools["search"];
        assert_eq!(search.rate_limit, Some("5/s".parse().unwrap()));
        assert_eq!(search.rate_limit_burst.map(NonZeroU32::get), Some(10));
    }

    #[test]
    fn unknown_keys_and_bad_values_name_file_line_and_key() {
        for (text, expected) in [
            (
                "[limits]\nmemroy = \"3MiB\"\n",
                "tool.toml:2: unknown field `memroy`",
            ),
            (
                "[limits]\ntimeout = \"soon\"\n",
                "tool.toml:2: expected number",
            ),
            (
                "\n\n[limits]\ntimeout = \"soon\"\n",
                "(at `timeout = \"soon\"`)",
            ),
            ("[network]\n", "unknown field `network`"),
            ("[limits]\ntimeout = true\n", "invalid type"),
            ("[limits]\nmemory = 32\n", "`32` has no unit: add one"),
            ("[limits]\ntimeout = 2000\n", "`2000` has no unit: add one"),
            ("[limits]\nmax-output = \"8MB\"\n", "use B, KiB, MiB"),
            (
                "[[dirs]]\nhost = \"a\"\nguest = \"/a\"\nmode = \"all\"\n",
                "unknown variant `all`",
            ),
            ("[env]\nA = { from = \"B\" }\n", "unknown field `from`"),
            ("[limits]\nfuel = -1\n", "invalid value"),
            (
                "[tools.t]\nrate-limit = \"5\"\n",
                "`5` is not a rate: write requests per period",
            ),
            ("[tools.t]\nrate-limit-burst = 0\n", "nonzero"),
            ("[tools.t]\nrate = \"5/s\"\n", "unknown field `rate`"),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with("tool.toml:"), "{err}");
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn old_unit_keys_are_refused_with_their_new_form() {
        for (text, expected) in [
            (
                "[limits]\nmemory-mib = 16\n",
                "tool.toml:2: `memory-mib` is no longer a key: write the value with its unit, e.g. memory = \"32MiB\"",
            ),
            (
                "[limits]\ntimeout-ms = 300\n",
                "tool.toml:2: `timeout-ms` is no longer a key: write the value with its unit, e.g. timeout = \"2s\"",
            ),
            (
                "[limits]\nmax-output-kib = 8\n",
                "tool.toml:2: `max-output-kib` is no longer a key: write the value with its unit, e.g. max-output = \"256KiB\"",
            ),
        ] {
            let err = parse(text).unwrap_err();
            assert!(err.starts_with(expected), "{text}: {err}");
        }
    }
}
