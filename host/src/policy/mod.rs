//! What a component may do: nothing, unless its manifest grants it.
//!
//! A component's [`Policy`] is resolved once, when it loads, from its
//! optional manifest (`NAME.toml` beside `NAME.wasm`, see [`manifest`]) and
//! the server's defaults. Without a manifest a component gets no files, no
//! environment variables, no network (sockets are never granted; outbound
//! HTTP only to hosts a manifest lists) and the server's default limits.
//! Resolving checks everything it can at load (directories exist, variables
//! and secrets are set, limits fit the server), so a bad grant fails the
//! load with a message naming the file and the key, never a call.

pub mod grants;
pub mod manifest;
mod pseudo_fs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component as PathPart, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use self::grants::{GrantedDir, ProtectedPaths};
use self::manifest::{DirMode, Manifest};
use crate::access::ComponentRules;
use crate::quotas::RateLimit;
use crate::sealing::STATE_KEYS_ENV;
use crate::units::{format_duration, format_size};

/// The smallest `[limits] memory` a manifest may ask (the server's
/// `--max-memory` has the same floor).
pub const MIN_MEMORY_BYTES: u64 = 1 << 20;

/// The shortest `[limits] timeout` (the server's `--call-timeout` has the
/// same floor).
pub const MIN_TIMEOUT: Duration = Duration::from_millis(1);

/// The smallest `[limits] max-output` (the server's `--max-output` has the
/// same floor).
pub const MIN_OUTPUT_BYTES: u64 = 1 << 10;

/// Named secret values, from `--secrets-file` (a TOML table of strings).
#[derive(Default, Clone)]
pub struct Secrets(BTreeMap<String, String>);

impl Secrets {
    /// Parses a secrets file: `name = "value"` lines.
    pub fn parse(text: &str, file: &Path) -> Result<Secrets, String> {
        toml::from_str::<BTreeMap<String, String>>(text)
            .map(Secrets)
            .map_err(|err| format!("{}: {}", file.display(), err.message().trim_end()))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}

/// The effective policy of one component.
#[derive(Clone)]
pub struct Policy {
    /// The manifest it came from, if any.
    pub manifest: Option<PathBuf>,
    /// Prepended to the names of its tools and prompts on the wire (empty:
    /// served under their own names).
    pub name_prefix: String,
    /// Granted directories, held open since the component loaded.
    pub dirs: Vec<GrantedDir>,
    /// Environment variables, in order (values may be secrets: never logged).
    pub env: Vec<(String, String)>,
    /// Hosts outbound HTTP may reach (shared with every call's hooks).
    pub http: Arc<HttpAllowList>,
    /// The limits every call of the component runs under.
    pub limits: CallLimits,
    /// How often each caller may call a tool of the component, by tool
    /// name, for the tools its manifest limits.
    pub rate_limits: BTreeMap<String, RateLimit>,
    /// Who may use what the component serves, as its manifest writes it.
    pub access: ComponentRules,
}

/// Per-call limits of one component.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallLimits {
    /// Memory cap of one instance, in bytes.
    pub memory_bytes: usize,
    /// Wall-clock deadline of one call.
    pub timeout: Duration,
    /// Fuel of one call, if metered.
    pub fuel: Option<u64>,
    /// Largest reply of one call, encoded, in bytes; also the most log and
    /// progress text one call may report.
    pub max_output_bytes: usize,
    /// Most instances running at once, if limited below the server's limit.
    pub max_concurrent: Option<u32>,
}

/// Outbound HTTP destinations: `host` (ports 80 and 443) or `host:port`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpAllowList(Vec<(String, Option<u16>)>);

impl HttpAllowList {
    /// Parses entries; the error names the bad one.
    fn parse(entries: &[String]) -> Result<HttpAllowList, String> {
        entries
            .iter()
            .map(|entry| {
                let bad = || {
                    format!(
                        "[http] allow: {entry:?} is not `host` or `host:port` (no scheme, no path)"
                    )
                };
                if entry.is_empty() || entry.contains(['/', '@', ' ']) {
                    return Err(bad());
                }
                let (host, port) = match entry.rsplit_once(':') {
                    Some((host, port)) if !host.ends_with(']') && host.contains(':') => {
                        // An IPv6 literal without brackets: refuse, it is ambiguous.
                        let _ = port;
                        return Err(bad());
                    }
                    Some((host, port)) => (host, Some(port.parse::<u16>().map_err(|_| bad())?)),
                    None => (entry.as_str(), None),
                };
                if host.is_empty() {
                    return Err(bad());
                }
                Ok((host.to_ascii_lowercase(), port))
            })
            .collect::<Result<_, _>>()
            .map(HttpAllowList)
    }

    /// Whether a request to `host` on `port` (the scheme's default if the
    /// URI gave none) is allowed.
    pub fn allows(&self, host: &str, port: u16) -> bool {
        self.0.iter().any(|(allowed, allowed_port)| {
            allowed.eq_ignore_ascii_case(host)
                && match allowed_port {
                    Some(p) => *p == port,
                    None => port == 80 || port == 443,
                }
        })
    }

    /// Whether nothing is allowed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for HttpAllowList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries: Vec<String> = self
            .0
            .iter()
            .map(|(host, port)| match port {
                Some(port) => format!("{host}:{port}"),
                None => host.clone(),
            })
            .collect();
        f.write_str(&entries.join(", "))
    }
}

/// What manifests are resolved against besides the server's limits: the
/// secrets they may grant, and Airlock's own files and configuration no
/// grant may expose.
#[derive(Debug, Clone, Default)]
pub struct PolicySources {
    /// Named secrets.
    pub secrets: Secrets,
    /// Airlock's own files.
    pub protected: ProtectedPaths,
    /// Airlock's own configuration variables (every option's `AIRLOCK_*`
    /// variable): no `from-env` may copy one, since they hold URLs with
    /// passwords, key files' paths and the like. The state keys' variable
    /// is refused whether or not it is listed here.
    pub own_variables: BTreeSet<String>,
}

/// What a policy is resolved against: the server's default limits, whether
/// the engine meters fuel, and the [`PolicySources`].
#[derive(Debug, Clone)]
pub struct PolicyContext<'a> {
    /// The server's limits of every call (its memory cap is also the most a
    /// manifest may ask).
    pub defaults: CallLimits,
    /// Whether the engine meters fuel, so that a manifest may set it.
    pub fuel_metered: bool,
    /// Secrets and protected files.
    pub sources: &'a PolicySources,
}

impl Policy {
    /// The policy of a component without a manifest: nothing granted, the
    /// server's limits.
    pub fn deny_all(defaults: &CallLimits) -> Policy {
        Policy {
            manifest: None,
            name_prefix: String::new(),
            dirs: Vec::new(),
            env: Vec::new(),
            http: Arc::default(),
            limits: defaults.clone(),
            rate_limits: BTreeMap::new(),
            access: ComponentRules::default(),
        }
    }

    /// The policy of the component at `component`: its manifest's, if the
    /// file exists, else [`Policy::deny_all`]. The error names the manifest
    /// and what is wrong. Blocks (it reads the manifest and resolves its
    /// grants): call it off the threads that serve requests.
    pub fn load_for(component: &Path, context: &PolicyContext<'_>) -> Result<Policy, String> {
        let path = Manifest::path_for(component);
        let text = match Manifest::read(&path) {
            Ok(Some(text)) => text,
            Ok(None) => return Ok(Policy::deny_all(&context.defaults)),
            Err(why) => return Err(format!("{}: {why}", path.display())),
        };
        let manifest = Manifest::parse(&text, &path)?;
        Policy::resolve(&manifest, &path, context)
            .map_err(|why| format!("{}: {why}", path.display()))
    }

    /// Resolves a parsed manifest (read from `path`) against the host.
    pub fn resolve(
        manifest: &Manifest,
        path: &Path,
        context: &PolicyContext<'_>,
    ) -> Result<Policy, String> {
        let base = path.parent().unwrap_or(Path::new("."));
        let mut policy = Policy::deny_all(&context.defaults);
        policy.manifest = Some(path.to_owned());
        if let Some(prefix) = &manifest.name_prefix {
            check_name_prefix(prefix)?;
            policy.name_prefix = prefix.clone();
        }
        let defaults = &context.defaults;
        let limits = &manifest.limits;
        if let Some(bytes) = limits.memory {
            let max = defaults.memory_bytes as u64;
            if !(MIN_MEMORY_BYTES..=max).contains(&bytes) {
                return Err(format!(
                    "[limits] memory = \"{}\": must be between {} and the server's --max-memory ({})",
                    format_size(bytes),
                    format_size(MIN_MEMORY_BYTES),
                    format_size(max)
                ));
            }
            policy.limits.memory_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(timeout) = limits.timeout {
            if timeout < MIN_TIMEOUT {
                return Err(format!(
                    "[limits] timeout must be at least {}",
                    format_duration(MIN_TIMEOUT)
                ));
            }
            policy.limits.timeout = timeout;
        }
        if let Some(fuel) = limits.fuel {
            if !context.fuel_metered {
                return Err("[limits] fuel needs `airlock serve --enable-fuel`".to_owned());
            }
            if fuel == 0 {
                return Err("[limits] fuel must be greater than 0".to_owned());
            }
            policy.limits.fuel = Some(fuel);
        }
        if let Some(bytes) = limits.max_output {
            // The server's --max-output bounds every reply a client gets
            // (a page of a list too): a component may only lower it.
            let max = defaults.max_output_bytes as u64;
            if !(MIN_OUTPUT_BYTES..=max).contains(&bytes) {
                return Err(format!(
                    "[limits] max-output = \"{}\": must be between {} and the server's --max-output ({})",
                    format_size(bytes),
                    format_size(MIN_OUTPUT_BYTES),
                    format_size(max)
                ));
            }
            policy.limits.max_output_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(n) = limits.max_concurrent {
            if n == 0 {
                return Err("[limits] max-concurrent must be at least 1".to_owned());
            }
            policy.limits.max_concurrent = Some(n);
        }
        for (i, grant) in manifest.dirs.iter().enumerate() {
            let key = format!("[[dirs]] #{}", i + 1);
            let guest = &grant.guest;
            let guest_ok = guest.starts_with('/')
                && Path::new(guest)
                    .components()
                    .all(|part| matches!(part, PathPart::RootDir | PathPart::Normal(_)));
            if !guest_ok {
                return Err(format!(
                    "{key}: guest = {guest:?} must be an absolute path without `.` or `..`"
                ));
            }
            if policy.dirs.iter().any(|d| d.guest == *guest) {
                return Err(format!("{key}: guest path {guest:?} is granted twice"));
            }
            let host = base.join(&grant.host);
            let granted = GrantedDir::open(&host, guest, grant.mode)
                .map_err(|why| format!("{key}: host = {:?} {why}", host.display()))?;
            context
                .sources
                .protected
                .check(&granted)
                .map_err(|why| format!("{key}: {why}"))?;
            policy.dirs.push(granted);
        }
        grants::check_nesting(policy.dirs.iter().map(|dir| (path, dir)))?;
        for (name, source) in &manifest.env {
            let key = format!("[env] {name}");
            if name.is_empty() || name.contains(['=', '\0']) {
                return Err(format!("{key}: not a valid variable name"));
            }
            let value = match (&source.value, &source.from_env, &source.secret) {
                (Some(value), None, None) => value.clone(),
                (None, Some(var), None) if var == STATE_KEYS_ENV => {
                    return Err(format!(
                        "{key}: from-env = {var:?} holds Airlock's state keys, which no manifest may grant"
                    ));
                }
                (None, Some(var), None) if context.sources.own_variables.contains(var) => {
                    return Err(format!(
                        "{key}: from-env = {var:?} is Airlock's own configuration, which no manifest may grant"
                    ));
                }
                (None, Some(var), None) => std::env::var(var).map_err(|_| {
                    format!("{key}: from-env = {var:?} is not set in Airlock's environment")
                })?,
                (None, None, Some(secret)) => context
                    .sources
                    .secrets
                    .get(secret)
                    .ok_or_else(|| {
                        format!(
                            "{key}: secret = {secret:?} is not in the secrets file (--secrets-file)"
                        )
                    })?
                    .to_owned(),
                _ => {
                    return Err(format!(
                        "{key}: give exactly one of `value`, `from-env` and `secret`"
                    ));
                }
            };
            if value.contains('\0') {
                return Err(format!("{key}: the value contains a NUL byte"));
            }
            policy.env.push((name.clone(), value));
        }
        policy.http = Arc::new(HttpAllowList::parse(&manifest.http.allow)?);
        for (tool, settings) in &manifest.tools {
            match (settings.rate_limit, settings.rate_limit_burst) {
                (Some(rate), burst) => {
                    policy
                        .rate_limits
                        .insert(tool.clone(), RateLimit::new(rate, burst));
                }
                (None, Some(_)) => {
                    return Err(format!(
                        "[tools.{tool}] rate-limit-burst needs a rate-limit"
                    ));
                }
                (None, None) => {}
            }
        }
        policy.access = manifest.access_rules();
        Ok(policy)
    }

    /// A human-readable account of the policy, for `airlock inspect` and
    /// the load log line (secret values never appear).
    pub fn describe(&self) -> Vec<String> {
        let mut lines = Vec::new();
        match &self.manifest {
            Some(path) => lines.push(format!("manifest: {}", path.display())),
            None => lines.push("manifest: none (nothing granted)".to_owned()),
        }
        if !self.name_prefix.is_empty() {
            lines.push(format!(
                "names: tools and prompts served as {}NAME",
                self.name_prefix
            ));
        }
        if self.dirs.is_empty() {
            lines.push("files: none".to_owned());
        }
        for dir in &self.dirs {
            let mode = match dir.mode {
                DirMode::ReadOnly => "read-only",
                DirMode::ReadWrite => "read-write",
            };
            lines.push(format!(
                "files: {} as {} ({mode})",
                dir.host.display(),
                dir.guest
            ));
        }
        if self.env.is_empty() {
            lines.push("environment: none".to_owned());
        } else {
            let names: Vec<&str> = self.env.iter().map(|(name, _)| name.as_str()).collect();
            lines.push(format!("environment: {}", names.join(", ")));
        }
        if self.http.is_empty() {
            lines.push("outbound HTTP: none".to_owned());
        } else {
            lines.push(format!("outbound HTTP: {}", self.http));
        }
        lines.push("sockets: none".to_owned());
        let limits = &self.limits;
        lines.push(format!(
            "limits: memory {}, timeout {}, output {}, fuel {}, concurrent {}",
            format_size(limits.memory_bytes as u64),
            format_duration(limits.timeout),
            format_size(limits.max_output_bytes as u64),
            limits
                .fuel
                .map_or("unmetered".to_owned(), |f| f.to_string()),
            limits
                .max_concurrent
                .map_or("server limit".to_owned(), |n| n.to_string()),
        ));
        for (tool, limit) in &self.rate_limits {
            lines.push(format!("rate limit: tool {tool}, {limit} per caller"));
        }
        let access = &self.access;
        if let Some(rule) = &access.component {
            lines.push(format!("access: {rule}"));
        }
        for (kind, items) in [
            ("tool", &access.tools),
            ("prompt", &access.prompts),
            ("resource", &access.resources),
        ] {
            for (key, rule) in items {
                lines.push(format!("access: {kind} {key}, {rule}"));
            }
        }
        lines
    }
}

/// Longest `name-prefix`, in bytes: a prefix tells components apart, and
/// every prefixed name must still be a valid tool name (at most 64 bytes).
pub const MAX_NAME_PREFIX_BYTES: usize = 32;

/// Checks a manifest's `name-prefix`: 1 to [`MAX_NAME_PREFIX_BYTES`] bytes
/// of what a tool name may hold (ASCII letters, digits, `_`, `.`, `-`).
fn check_name_prefix(prefix: &str) -> Result<(), String> {
    let valid = (1..=MAX_NAME_PREFIX_BYTES).contains(&prefix.len())
        && prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(format!(
            "name-prefix = {prefix:?}: must be 1 to {MAX_NAME_PREFIX_BYTES} ASCII letters, digits, `_`, `.` or `-`"
        ))
    }
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("manifest", &self.manifest)
            .field("name_prefix", &self.name_prefix)
            .field("dirs", &self.dirs)
            .field("env", &self.env.iter().map(|(n, _)| n).collect::<Vec<_>>())
            .field("http", &self.http)
            .field("limits", &self.limits)
            .field("rate_limits", &self.rate_limits)
            .field("access", &self.access)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The server's limits in these tests: the runtime's defaults.
    fn defaults() -> CallLimits {
        CallLimits {
            memory_bytes: 64 << 20,
            timeout: Duration::from_secs(10),
            fuel: None,
            max_output_bytes: 1 << 20,
            max_concurrent: None,
        }
    }

    fn resolve(text: &str, dir: &Path) -> Result<Policy, String> {
        let sources = PolicySources {
            secrets: Secrets::parse("token = \"s3cret\"", Path::new("secrets.toml")).unwrap(),
            protected: ProtectedPaths::default(),
            own_variables: BTreeSet::from(["AIRLOCK_TASK_STORE".to_owned()]),
        };
        let manifest = Manifest::parse(text, Path::new("t.toml"))?;
        Policy::resolve(
            &manifest,
            &dir.join("t.toml"),
            &PolicyContext {
                defaults: defaults(),
                fuel_metered: false,
                sources: &sources,
            },
        )
    }

    fn temp_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("airlock-policy-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        dir
    }

    #[test]
    fn a_name_prefix_is_kept_only_when_it_could_start_a_tool_name() {
        let dir = temp_dir();
        let policy = resolve("name-prefix = \"py_\"\n", &dir).unwrap();
        assert_eq!(policy.name_prefix, "py_");
        assert_eq!(resolve("", &dir).unwrap().name_prefix, "");
        for bad in ["", "py prefix ", "py/", "é_", &"p".repeat(33)] {
            let err = resolve(&format!("name-prefix = {bad:?}\n"), &dir).unwrap_err();
            assert!(err.starts_with("name-prefix = "), "{bad:?}: {err}");
        }
    }

    #[test]
    fn grants_resolve_against_the_manifest_directory() {
        let dir = temp_dir();
        let policy = resolve(
            r#"
            [limits]
            memory = "8MiB"
            timeout = "250ms"
            [[dirs]]
            host = "data"
            guest = "/data"
            [env]
            PLAIN = { value = "v" }
            TOKEN = { secret = "token" }
            [http]
            allow = ["Example.com", "localhost:8080"]
            [tools.search]
            rate-limit = "5/s"
            "#,
            &dir,
        )
        .unwrap();
        assert_eq!(policy.limits.memory_bytes, 8 << 20);
        assert_eq!(policy.limits.timeout, Duration::from_millis(250));
        assert_eq!(
            policy.dirs[0].host,
            dir.join("data").canonicalize().unwrap()
        );
        assert_eq!(
            policy.env,
            [
                ("PLAIN".to_owned(), "v".to_owned()),
                ("TOKEN".to_owned(), "s3cret".to_owned())
            ]
        );
        assert!(policy.http.allows("example.com", 443));
        assert!(!policy.http.allows("example.com", 8443));
        assert!(policy.http.allows("localhost", 8080));
        assert!(!policy.http.allows("localhost", 80));
        assert!(!policy.http.allows("evil.example.com", 443));
        let described = policy.describe().join("\n");
        assert!(described.contains("PLAIN, TOKEN"), "{described}");
        assert!(
            described.contains("rate limit: tool search, 5/s (burst 5) per caller"),
            "{described}"
        );
        assert!(!described.contains("s3cret"), "{described}");
        assert!(!format!("{policy:?}").contains("s3cret"));
    }

    #[test]
    fn bad_grants_are_refused_with_the_key() {
        let dir = temp_dir();
        for (text, expected) in [
            (
                "[limits]\nmemory = \"100GiB\"\n",
                "memory = \"100GiB\": must be between 1MiB and the server's --max-memory (64MiB)",
            ),
            (
                "[limits]\nmemory = \"512KiB\"\n",
                "must be between 1MiB and the server's --max-memory",
            ),
            (
                "[limits]\ntimeout = \"0s\"\n",
                "timeout must be at least 1ms",
            ),
            (
                "[limits]\nmax-output = \"1B\"\n",
                "max-output = \"1B\": must be between 1KiB and the server's --max-output (1MiB)",
            ),
            (
                "[limits]\nmax-output = \"2MiB\"\n",
                "max-output = \"2MiB\": must be between 1KiB and the server's --max-output (1MiB)",
            ),
            ("[limits]\nfuel = 10\n", "--enable-fuel"),
            ("[limits]\nmax-concurrent = 0\n", "max-concurrent"),
            (
                "[[dirs]]\nhost = \"missing\"\nguest = \"/m\"\n",
                "cannot be granted",
            ),
            (
                "[[dirs]]\nhost = \"data\"\nguest = \"data\"\n",
                "absolute path",
            ),
            (
                "[[dirs]]\nhost = \"data\"\nguest = \"/a/../b\"\n",
                "absolute path",
            ),
            (
                "[env]\nX = { from-env = \"AIRLOCK_TEST_SURELY_UNSET\" }\n",
                "is not set",
            ),
            (
                "[env]\nX = { secret = \"nope\" }\n",
                "not in the secrets file",
            ),
            (
                "[env]\nX = { from-env = \"AIRLOCK_STATE_KEYS\" }\n",
                "holds Airlock's state keys",
            ),
            (
                "[env]\nX = { from-env = \"AIRLOCK_TASK_STORE\" }\n",
                "is Airlock's own configuration",
            ),
            (
                "[env]\nX = { value = \"a\", secret = \"token\" }\n",
                "exactly one",
            ),
            ("[env]\nX = {}\n", "exactly one"),
            (
                "[http]\nallow = [\"https://example.com\"]\n",
                "not `host` or `host:port`",
            ),
            (
                "[http]\nallow = [\"example.com:http\"]\n",
                "not `host` or `host:port`",
            ),
            (
                "[tools.t]\nrate-limit-burst = 3\n",
                "[tools.t] rate-limit-burst needs a rate-limit",
            ),
        ] {
            let err = resolve(text, &dir).unwrap_err();
            assert!(err.contains(expected), "{text}: {err}");
        }
    }

    #[test]
    fn no_manifest_means_nothing_granted() {
        let policy = Policy::load_for(
            Path::new("/nonexistent/dir/tool.wasm"),
            &PolicyContext {
                defaults: defaults(),
                fuel_metered: false,
                sources: &PolicySources::default(),
            },
        )
        .unwrap();
        assert!(policy.manifest.is_none() && policy.dirs.is_empty() && policy.env.is_empty());
        assert!(policy.http.is_empty());
        assert_eq!(policy.limits, defaults());
    }
}
