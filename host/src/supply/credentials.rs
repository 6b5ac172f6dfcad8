//! The credentials sent to each registry, chosen per registry host the way
//! registries are usually run: an explicit setting for every registry
//! (`--registry-token-file`, `--registry-basic-auth-file`, else the
//! environment variables [`TOKEN_ENV`] and [`BASIC_AUTH_ENV`]) wins; else
//! the Docker config's entry for that host (`$DOCKER_CONFIG/config.json`,
//! else `~/.docker/config.json`: `auths.<host>.auth`, or `username` and
//! `password`); else none. A Docker config that keeps a host's credentials
//! only in a credential helper is refused with a clear error: helpers are
//! not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use base64::Engine as _;
use oci_client::secrets::RegistryAuth;
use serde::Deserialize;

use super::RegistrySettings;

/// The environment variable holding a bearer token sent to every registry
/// (when no credentials file is given).
pub const TOKEN_ENV: &str = "AIRLOCK_REGISTRY_TOKEN";

/// The environment variable holding `user:password` for basic
/// authentication to every registry (when no credentials file and no
/// [`TOKEN_ENV`] are given).
pub const BASIC_AUTH_ENV: &str = "AIRLOCK_REGISTRY_BASIC_AUTH";

/// The credentials of every registry a pull reaches.
pub(super) struct Credentials {
    /// Sent to every registry, if set.
    explicit: Option<RegistryAuth>,
    /// The Docker config read, and its path (for errors).
    docker: Option<(PathBuf, DockerConfig)>,
}

impl Credentials {
    /// Reads the explicit settings, the environment and the Docker config.
    pub(super) fn read(settings: &RegistrySettings) -> anyhow::Result<Credentials> {
        let env = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
        let explicit = explicit(settings, env)?;
        let docker = match docker_config_path(env) {
            Some(path) if explicit.is_none() && path.exists() => {
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("cannot read the Docker config {}", path.display()))?;
                let config = DockerConfig::parse(&text)
                    .with_context(|| format!("the Docker config {}", path.display()))?;
                Some((path, config))
            }
            _ => None,
        };
        Ok(Credentials { explicit, docker })
    }

    /// What to send to `registry` (`host[:port]`). Fails if the Docker
    /// config keeps its credentials only in a credential helper.
    pub(super) fn for_registry(&self, registry: &str) -> anyhow::Result<RegistryAuth> {
        if let Some(auth) = &self.explicit {
            return Ok(auth.clone());
        }
        match &self.docker {
            Some((path, config)) => config
                .for_registry(registry)
                .with_context(|| format!("registry {registry}, Docker config {}", path.display())),
            None => Ok(RegistryAuth::Anonymous),
        }
    }
}

/// The credentials for every registry given by `settings`' files, else by
/// the environment (`env`), if any.
fn explicit(
    settings: &RegistrySettings,
    env: impl Fn(&str) -> Option<String>,
) -> anyhow::Result<Option<RegistryAuth>> {
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .map(|text| text.trim().to_owned())
            .with_context(|| format!("cannot read {}", path.display()))
    };
    if let Some(path) = &settings.token_file {
        return Ok(Some(RegistryAuth::Bearer(read(path)?)));
    }
    if let Some(path) = &settings.basic_auth_file {
        return basic(&read(path)?)
            .map(Some)
            .with_context(|| path.display().to_string());
    }
    if let Some(token) = env(TOKEN_ENV) {
        return Ok(Some(RegistryAuth::Bearer(token.trim().to_owned())));
    }
    match env(BASIC_AUTH_ENV) {
        Some(text) => basic(text.trim()).map(Some).context(BASIC_AUTH_ENV),
        None => Ok(None),
    }
}

/// `user:password` as basic authentication.
fn basic(text: &str) -> anyhow::Result<RegistryAuth> {
    let (user, password) = text.split_once(':').context("expected `user:password`")?;
    Ok(RegistryAuth::Basic(user.to_owned(), password.to_owned()))
}

/// `$DOCKER_CONFIG/config.json`, else `$HOME/.docker/config.json`.
fn docker_config_path(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    match env("DOCKER_CONFIG") {
        Some(dir) => Some(PathBuf::from(dir).join("config.json")),
        None => env("HOME").map(|home| PathBuf::from(home).join(".docker").join("config.json")),
    }
}

/// The parts of a Docker config (`config.json`) about registries.
#[derive(Default, Deserialize)]
struct DockerConfig {
    /// Credentials by registry (`host[:port]`, or a URL naming it).
    #[serde(default)]
    auths: BTreeMap<String, DockerAuth>,
    /// Credential helpers by registry.
    #[serde(default, rename = "credHelpers")]
    cred_helpers: BTreeMap<String, String>,
    /// The credential helper of every registry without its own.
    #[serde(default, rename = "credsStore")]
    creds_store: Option<String>,
}

/// One registry's entry of `auths`.
#[derive(Default, Deserialize)]
struct DockerAuth {
    /// base64 of `user:password`.
    auth: Option<String>,
    username: Option<String>,
    password: Option<String>,
    /// An OAuth 2 refresh token, exchanged at the registry's token service.
    identitytoken: Option<String>,
}

impl DockerConfig {
    fn parse(text: &str) -> anyhow::Result<DockerConfig> {
        serde_json::from_str(text).context("not a Docker config (JSON with `auths`)")
    }

    /// The credentials of `registry` this config holds.
    fn for_registry(&self, registry: &str) -> anyhow::Result<RegistryAuth> {
        let entry = self
            .auths
            .iter()
            .find(|(key, _)| same_registry(key, registry))
            .map(|(_, entry)| entry);
        if let Some(entry) = entry {
            if let Some(auth) = entry.auth.as_deref().filter(|auth| !auth.is_empty()) {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(auth.trim())
                    .ok()
                    .and_then(|bytes| String::from_utf8(bytes).ok())
                    .context("its `auth` is not base64 of `user:password`")?;
                return basic(&decoded).context("its `auth`");
            }
            if let (Some(user), Some(password)) = (&entry.username, &entry.password) {
                return Ok(RegistryAuth::Basic(user.clone(), password.clone()));
            }
            if entry.identitytoken.is_some() {
                bail!(
                    "its `identitytoken` (an OAuth 2 refresh token) is not supported: give a bearer token with --registry-token-file or {TOKEN_ENV}"
                );
            }
        }
        let helper = self
            .cred_helpers
            .iter()
            .find(|(key, _)| same_registry(key, registry))
            .map(|(_, helper)| helper)
            .or(self.creds_store.as_ref().filter(|_| entry.is_some()));
        if let Some(helper) = helper {
            bail!(
                "its credentials are kept by the credential helper `docker-credential-{helper}`, which Airlock does not run: give them with --registry-basic-auth-file, --registry-token-file, {BASIC_AUTH_ENV} or {TOKEN_ENV}, or as `auth` in the Docker config"
            );
        }
        Ok(RegistryAuth::Anonymous)
    }
}

/// Whether the Docker config key `key` (`host[:port]`, or a URL such as
/// `https://index.docker.io/v1/`) names `registry` (`host[:port]`).
fn same_registry(key: &str, registry: &str) -> bool {
    let host = key
        .split_once("://")
        .map_or(key, |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or_default();
    let docker_hub = |name: &str| {
        matches!(
            name,
            "docker.io" | "index.docker.io" | "registry-1.docker.io"
        )
    };
    host.eq_ignore_ascii_case(registry) || (docker_hub(host) && docker_hub(registry))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> RegistrySettings {
        RegistrySettings {
            timeout: std::time::Duration::from_secs(1),
            retries: 0,
            max_bytes: 1,
            max_document_bytes: 1,
            plain_http: Vec::new(),
            token_file: None,
            basic_auth_file: None,
        }
    }

    fn config(json: &str) -> DockerConfig {
        DockerConfig::parse(json).unwrap()
    }

    fn basic_auth(user: &str, password: &str) -> RegistryAuth {
        RegistryAuth::Basic(user.to_owned(), password.to_owned())
    }

    #[test]
    fn docker_config_auth_is_chosen_per_registry_host() {
        let config = config(
            r#"{"auths": {
                "registry.example.com": {"auth": "YWxpY2U6czNjcmV0"},
                "https://index.docker.io/v1/": {"auth": "Ym9iOmh1bnRlcjI="},
                "http://127.0.0.1:5000": {"username": "carol", "password": "pw"}
            }}"#,
        );
        assert_eq!(
            config.for_registry("registry.example.com").unwrap(),
            basic_auth("alice", "s3cret")
        );
        assert_eq!(
            config.for_registry("index.docker.io").unwrap(),
            basic_auth("bob", "hunter2")
        );
        assert_eq!(
            config.for_registry("127.0.0.1:5000").unwrap(),
            basic_auth("carol", "pw")
        );
        assert_eq!(
            config.for_registry("other.example.com").unwrap(),
            RegistryAuth::Anonymous
        );
        assert_eq!(
            config.for_registry("registry.example.com:5000").unwrap(),
            RegistryAuth::Anonymous,
            "another port is another registry"
        );
    }

    #[test]
    fn a_registry_kept_only_by_a_credential_helper_is_refused_with_its_name() {
        let config = config(
            r#"{"auths": {"stored.example.com": {}, "plain.example.com": {"auth": "dTpw"}},
                "credHelpers": {"123.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"},
                "credsStore": "desktop"}"#,
        );
        let err = format!(
            "{:#}",
            config
                .for_registry("123.dkr.ecr.eu-west-1.amazonaws.com")
                .unwrap_err()
        );
        assert!(err.contains("docker-credential-ecr-login"), "{err}");
        let err = format!(
            "{:#}",
            config.for_registry("stored.example.com").unwrap_err()
        );
        assert!(err.contains("docker-credential-desktop"), "{err}");
        assert_eq!(
            config.for_registry("plain.example.com").unwrap(),
            basic_auth("u", "p")
        );
        assert_eq!(
            config.for_registry("public.example.com").unwrap(),
            RegistryAuth::Anonymous,
            "the store is not asked about a registry the config does not name"
        );
    }

    #[test]
    fn a_bad_docker_config_entry_says_what_is_wrong() {
        let err = |json: &str| format!("{:#}", config(json).for_registry("r.example").unwrap_err());
        assert!(err(r#"{"auths": {"r.example": {"auth": "%%%"}}}"#).contains("not base64"));
        assert!(
            err(r#"{"auths": {"r.example": {"auth": "bm9jb2xvbg=="}}}"#).contains("user:password")
        );
        assert!(
            err(r#"{"auths": {"r.example": {"identitytoken": "t"}}}"#).contains("identitytoken")
        );
        assert!(DockerConfig::parse(r#"{"auths": "r.example"}"#).is_err());
    }

    #[test]
    fn explicit_credentials_win_files_first_then_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "from-file\n").unwrap();
        let env = |name: &str| match name {
            TOKEN_ENV => Some("from-env".to_owned()),
            BASIC_AUTH_ENV => Some("user:pw".to_owned()),
            _ => None,
        };
        let mut with_file = settings();
        with_file.token_file = Some(token);
        assert_eq!(
            explicit(&with_file, env).unwrap(),
            Some(RegistryAuth::Bearer("from-file".to_owned()))
        );
        assert_eq!(
            explicit(&settings(), env).unwrap(),
            Some(RegistryAuth::Bearer("from-env".to_owned()))
        );
        let only_basic = |name: &str| (name == BASIC_AUTH_ENV).then(|| "user:pw".to_owned());
        assert_eq!(
            explicit(&settings(), only_basic).unwrap(),
            Some(basic_auth("user", "pw"))
        );
        assert_eq!(explicit(&settings(), |_| None).unwrap(), None);
        let bad = |name: &str| (name == BASIC_AUTH_ENV).then(|| "no-colon".to_owned());
        let err = format!("{:#}", explicit(&settings(), bad).unwrap_err());
        assert!(
            err.contains(BASIC_AUTH_ENV) && err.contains("user:password"),
            "{err}"
        );
    }

    #[test]
    fn the_docker_config_is_found_by_docker_config_else_home() {
        let env = |name: &str| match name {
            "DOCKER_CONFIG" => Some("/etc/docker-conf".to_owned()),
            "HOME" => Some("/home/u".to_owned()),
            _ => None,
        };
        assert_eq!(
            docker_config_path(env),
            Some(PathBuf::from("/etc/docker-conf/config.json"))
        );
        let home = |name: &str| (name == "HOME").then(|| "/home/u".to_owned());
        assert_eq!(
            docker_config_path(home),
            Some(PathBuf::from("/home/u/.docker/config.json"))
        );
    }
}
