//! Who may call over HTTP: bearer tokens, JWT access tokens, OAuth
//! protected-resource metadata, and the `Host`/`Origin` allow-list.

use std::path::PathBuf;

use super::sandbox::saturate;
use super::values;
use crate::access::CallerLimits;
use crate::auth::AuthSettings;

/// HTTP access options of `airlock serve`.
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "HTTP access")]
pub struct AccessOptions {
    /// File of bearer tokens, one `<token> <name> [scope:<s>]... [group:<g>]...` per line (the
    /// principal is `token:<name>`).
    /// Without it and without JWT keys, HTTP is unauthenticated.
    #[arg(long, value_name = "FILE")]
    pub tokens_file: Option<PathBuf>,
    /// Extra host name accepted in Host/Origin headers; repeatable. localhost, 127.0.0.1 and
    /// [::1] always are.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Extra exact origin accepted in the Origin header, e.g. https://app.example.com;
    /// repeatable.
    #[arg(long = "allowed-origin", value_name = "ORIGIN", value_parser = values::origin)]
    pub allowed_origins: Vec<String>,
    /// Accepted JWT issuer (`iss`); repeatable [default: the --oauth-authorization-server URLs].
    #[arg(long = "jwt-issuer", value_name = "ISSUER")]
    pub jwt_issuers: Vec<String>,
    /// Audience (`aud`) a JWT must name; repeatable [default: the --oauth-resource URL].
    #[arg(long = "jwt-audience", value_name = "AUDIENCE")]
    pub jwt_audiences: Vec<String>,
    /// JWT verification keys: PEM public keys (RSA, EC P-256/P-384, Ed25519) or a JWK set file;
    /// repeatable.
    #[arg(long = "jwt-key-file", value_name = "FILE")]
    pub jwt_key_files: Vec<PathBuf>,
    /// Most scopes, and most groups, a JWT's caller keeps; the rest are dropped.
    #[arg(long, value_name = "N", default_value_t = 256,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub jwt_max_names: u64,
    /// Most claims (besides the registered ones) a JWT's caller keeps for `claim:` rules; the
    /// rest are dropped.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(0..=65_536))]
    pub jwt_max_claims: u64,
    /// Most values of one array claim a JWT's caller keeps.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub jwt_max_claim_values: u64,
    /// Longest scope, group, claim name or claim value a JWT's caller keeps; longer ones are
    /// dropped.
    #[arg(long, value_name = "SIZE", default_value = "1KiB", value_parser = values::size(1, 1 << 20))]
    pub jwt_max_claim_bytes: u64,
    /// File holding an HS256 shared secret for JWTs (at least 32 bytes; surrounding whitespace is
    /// ignored).
    #[arg(long, value_name = "FILE")]
    pub jwt_hs256_secret_file: Option<PathBuf>,
    /// This MCP endpoint's URL as clients reach it, e.g. https://mcp.example.com/mcp: serves OAuth
    /// protected-resource metadata (RFC 9728) and names it in 401 challenges.
    #[arg(long, value_name = "URL")]
    pub oauth_resource: Option<String>,
    /// Authorization server (issuer URL) named in the metadata; repeatable.
    #[arg(long = "oauth-authorization-server", value_name = "URL")]
    pub oauth_authorization_servers: Vec<String>,
    /// Scope named in the metadata (`scopes_supported`) and in 401 challenges; repeatable.
    #[arg(long = "oauth-scope", value_name = "SCOPE")]
    pub oauth_scopes: Vec<String>,
    /// Access policy file (TOML): `[require]` rules every caller must pass, `[default]` rules of
    /// items whose manifest has none, `[list]` who may see what it may not use. Without it (and
    /// without `allow` rules in manifests) every caller may use everything.
    #[arg(long, value_name = "FILE")]
    pub access_policy: Option<PathBuf>,
}

impl AccessOptions {
    /// The JWT and OAuth settings.
    pub fn auth(&self) -> AuthSettings {
        AuthSettings {
            jwt_issuers: self.jwt_issuers.clone(),
            jwt_audiences: self.jwt_audiences.clone(),
            jwt_key_files: self.jwt_key_files.clone(),
            jwt_hs256_secret_file: self.jwt_hs256_secret_file.clone(),
            oauth_resource: self.oauth_resource.clone(),
            oauth_authorization_servers: self.oauth_authorization_servers.clone(),
            oauth_scopes: self.oauth_scopes.clone(),
            jwt_caller_limits: CallerLimits {
                names: saturate(self.jwt_max_names),
                claims: saturate(self.jwt_max_claims),
                claim_values: saturate(self.jwt_max_claim_values),
                claim_bytes: saturate(self.jwt_max_claim_bytes),
            },
        }
    }
}
